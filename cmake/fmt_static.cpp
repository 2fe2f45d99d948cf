// fmt's compiled part as a static library for the static shim link: Debian ships libfmt
// only as a shared object, and FMT_HEADER_ONLY would compile all of it into every source
// file that includes <fmt/format.h> (about 2.5x the compile time of each of those files).
//
// Without FMT_HEADER_ONLY, format-inl.h defines fmt's non-template functions out of line
// (vformat, vprint, ...). The templates that format.h only declares (extern template or
// declaration without a body) are instantiated here for char and wchar_t.
#include <fmt/format-inl.h>

#include <locale>

FMT_BEGIN_NAMESPACE
namespace detail {

template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;

template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;

template void buffer<wchar_t>::append(const wchar_t* begin, const wchar_t* end);

}  // namespace detail
FMT_END_NAMESPACE
