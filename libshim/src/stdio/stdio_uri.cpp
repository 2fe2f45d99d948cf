#include "stdio/stdio_uri.h"

#include <cctype>

#include <fmt/format.h>

#include "gocompat/go_url.h"

namespace shim {

namespace {

bool is_scheme_char(char c, bool first) {
  if (std::isalpha(static_cast<unsigned char>(c))) return true;
  if (first) return false;
  return std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

// Length of a leading "scheme:" (without the colon), 0 when there is none.
std::size_t scheme_length(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ':') return i;
    if (!is_scheme_char(text[i], i == 0)) return 0;
  }
  return 0;
}

shim::Status parse_error(std::string_view text, std::string_view why) {
  return shim::unknown(fmt::format("unable to parse stdout uri: parse \"{}\": {}", text, why));
}

}  // namespace

shim::Status parse_stdio_uri(std::string_view text, StdioUri* uri) {
  *uri = StdioUri{};
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return parse_error(text, "net/url: invalid control character in URL");
    }
  }
  std::string_view rest = text;
  if (std::size_t n = scheme_length(rest); n > 0) {
    for (char c : rest.substr(0, n)) {
      uri->scheme.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    rest.remove_prefix(n + 1);
  }
  if (std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    rest = rest.substr(0, hash);
  }
  if (std::size_t question = rest.find('?'); question != std::string_view::npos) {
    uri->query = std::string(rest.substr(question + 1));
    rest = rest.substr(0, question);
  }
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    std::size_t slash = rest.find('/');
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  }
  std::string bad_escape;
  if (!go_url_unescape(rest, GoUnescape::kPath, &uri->path, &bad_escape)) {
    return parse_error(text, fmt::format("invalid URL escape \"{}\"", bad_escape));
  }
  if (uri->scheme.empty()) uri->scheme = "fifo";
  return {};
}

}  // namespace shim
