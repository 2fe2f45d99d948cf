#include "gocompat/go_url.h"

namespace shim {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool go_url_unescape(std::string_view text, GoUnescape mode, std::string* out,
                     std::string* bad_escape) {
  out->clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && mode == GoUnescape::kQuery) {
      out->push_back(' ');
      continue;
    }
    if (c != '%') {
      out->push_back(c);
      continue;
    }
    int high = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
    int low = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
    if (high < 0 || low < 0) {
      if (bad_escape != nullptr) *bad_escape = std::string(text.substr(i, 3));
      return false;
    }
    out->push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return true;
}

}  // namespace shim
