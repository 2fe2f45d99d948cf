// The stdio strings of Create/Exec: parse_stdio_uri (Go's url.Parse subset) and, for
// binary:// loggers, binary_logger_args (Go's url.Query()). Checked:
//  - an accepted URI has a lower-case scheme ("fifo" when none) and a query without '#';
//  - any bytes percent-encoded as the path of a file:// URI decode back to themselves;
//  - "k=v&..." built from the input's lines (escaped) gives the pairs back, each key
//    once with its first value, in order.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "fuzz_check.h"
#include "stdio/binary_logger.h"
#include "stdio/stdio_uri.h"

namespace {

std::string percent_encode(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("%{:02X}", c);
  return out;
}

void check_parsed(std::string_view text) {
  shim::StdioUri uri;
  shim::Status status = shim::parse_stdio_uri(text, &uri);
  if (!status.ok()) {
    FUZZ_CHECK(status.message().starts_with("unable to parse stdout uri: "));
    return;
  }
  FUZZ_CHECK(!uri.scheme.empty());
  for (char c : uri.scheme) FUZZ_CHECK(!std::isupper(static_cast<unsigned char>(c)));
  FUZZ_CHECK(uri.query.find('#') == std::string::npos);
  if (uri.scheme != "binary" && uri.scheme != "binary-v2") return;
  std::vector<std::string> args = shim::binary_logger_args(uri.query);
  FUZZ_CHECK(args.size() % 2 == 0);
  std::set<std::string> keys;
  for (std::size_t i = 0; i < args.size(); i += 2) FUZZ_CHECK(keys.insert(args[i]).second);
}

void check_path_round_trip(std::string_view bytes) {
  shim::StdioUri uri;
  std::string text = "file://" + percent_encode(bytes);
  FUZZ_CHECK(shim::parse_stdio_uri(text, &uri).ok());
  FUZZ_CHECK(uri.scheme == "file");
  // No "/" after the authority: the whole escaped text was the host, the path is empty.
  FUZZ_CHECK(uri.path.empty());
  text = "file:///" + percent_encode(bytes);
  FUZZ_CHECK(shim::parse_stdio_uri(text, &uri).ok());
  FUZZ_CHECK(uri.path == "/" + std::string(bytes));
}

void check_query_round_trip(std::string_view bytes) {
  std::vector<std::string> words;
  for (;;) {
    std::size_t newline = bytes.find('\n');
    words.emplace_back(bytes.substr(0, newline));
    if (newline == std::string_view::npos) break;
    bytes.remove_prefix(newline + 1);
  }
  std::string query;
  std::vector<std::string> expected;
  std::set<std::string> seen;
  for (std::size_t i = 0; i + 1 < words.size(); i += 2) {
    if (!query.empty()) query += '&';
    query += percent_encode(words[i]) + "=" + percent_encode(words[i + 1]);
    if (seen.insert(words[i]).second) {
      expected.push_back(words[i]);
      expected.push_back(words[i + 1]);
    }
  }
  shim::StdioUri uri;
  FUZZ_CHECK(shim::parse_stdio_uri("binary:///bin/logger?" + query, &uri).ok());
  FUZZ_CHECK(uri.path == "/bin/logger");
  FUZZ_CHECK(shim::binary_logger_args(uri.query) == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_parsed(text);
  shim::binary_logger_args(text);  // any query text, not only what parsed
  check_path_round_trip(text);
  check_query_round_trip(text);
  return 0;
}
