// UTF-8 helpers with Go's semantics (unicode/utf8, bytes.TrimSpace, unicode.IsSpace),
// shared by the bootstrap decoder, the start-answer parser and the logger.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shim::detail {

inline constexpr char32_t kRuneError = 0xFFFD;

struct Rune {
  char32_t value = kRuneError;
  std::size_t size = 0;  // bytes consumed; 1 for an invalid byte, 0 only at end of input
};

// Decodes the rune starting at s[pos]. Overlong forms, surrogates and values above
// U+10FFFF are invalid: {kRuneError, 1}, like Go's utf8.DecodeRuneInString.
Rune decode_rune(std::string_view s, std::size_t pos);
// Decodes the last rune of s (Go's utf8.DecodeLastRuneInString).
Rune decode_last_rune(std::string_view s);

// Go's utf8.ValidString; also what protobuf requires of proto3 `string` fields.
bool is_valid_utf8(std::string_view s);

// Go's strings.ToValidUTF8(s, "\uFFFD"): each run of invalid bytes becomes one U+FFFD.
// What goes into a proto3 `string` field from bytes nobody checked (an error that
// quotes a file's contents): Go's protobuf refuses to decode invalid UTF-8 there.
std::string to_valid_utf8(std::string_view s);

// Go's unicode.IsSpace.
bool is_space(char32_t rune);

// Go's bytes.TrimSpace / strings.TrimSpace: containerd trims the `start` output this way.
std::string_view trim_space(std::string_view s);

}  // namespace shim::detail
