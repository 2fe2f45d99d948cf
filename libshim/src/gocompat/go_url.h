// Go's net/url unescaping, the one home for it: the stdio URIs containerd sends are parsed
// with url.Parse (the path unescaped as by url.PathUnescape) and a binary:// logger's
// arguments with url.ParseQuery (url.QueryUnescape).
#pragma once

#include <string>
#include <string_view>

namespace shim {

enum class GoUnescape {
  kPath,   // url.PathUnescape: %XX is a byte, '+' stays '+'
  kQuery,  // url.QueryUnescape: also '+' is a space
};

// Unescapes `text` into `*out`. false on a bad %XX escape, with `*bad_escape` (if set)
// holding it as Go quotes it in its error: up to three bytes from the '%'.
bool go_url_unescape(std::string_view text, GoUnescape mode, std::string* out,
                     std::string* bad_escape = nullptr);

}  // namespace shim
