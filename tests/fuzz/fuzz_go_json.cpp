// Go encoding/json behaviour the shim reproduces:
//  - go_json_syntax_check, which Update runs on the request's LinuxResources JSON
//    before runc sees it: anything Boost.JSON (stricter: UTF-8, depth 32) accepts, it
//    accepts too; its errors are Unknown with one of Go's SyntaxError texts;
//  - go_json_marshal (-info's Features, options.json): what it writes for a parsed
//    document passes the syntax check, parses back to the same document, and is a
//    fixed point;
//  - go_json_quote of any bytes is one JSON string; of valid UTF-8, that string again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "fuzz_check.h"
#include "json_compare.h"
#include "gocompat/go_json_syntax.h"
#include "gocompat/utf8.h"
#include "gocompat/go_compat.h"

namespace {

namespace json = boost::json;

void check_syntax(std::string_view text) {
  shim::Status status = shim::go_json_syntax_check(text);
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == shim::Code::kUnknown);
    std::string_view message = status.message();
    FUZZ_CHECK(message.starts_with("invalid character ") ||
               message == "unexpected end of JSON input");
  }
  boost::system::error_code ec;
  json::value value = json::parse(text, ec);
  if (ec) return;
  FUZZ_CHECK(status.ok());

  std::string marshalled = shim::go_json_marshal(value);
  FUZZ_CHECK(shim::go_json_syntax_check(marshalled).ok());
  json::value back = json::parse(marshalled, ec);
  FUZZ_CHECK(!ec);
  bool has_double = false;
  FUZZ_CHECK(fuzz::same_document(value, back, &has_double));
  if (!has_double) FUZZ_CHECK(shim::go_json_marshal(back) == marshalled);
}

void check_quote(std::string_view bytes) {
  std::string quoted = shim::go_json_quote(bytes);
  FUZZ_CHECK(shim::go_json_syntax_check(quoted).ok());
  boost::system::error_code ec;
  json::value value = json::parse(quoted, ec);
  FUZZ_CHECK(!ec && value.is_string());
  // Valid UTF-8 comes back unchanged, and quotes to the same text again. Invalid bytes
  // were written as the escape \ufffd (as Go does), which reads back as U+FFFD itself.
  if (shim::detail::is_valid_utf8(bytes)) {
    FUZZ_CHECK(value.as_string() == bytes);
    FUZZ_CHECK(shim::go_json_quote(value.as_string()) == quoted);
  } else {
    json::value again = json::parse(shim::go_json_quote(value.as_string()), ec);
    FUZZ_CHECK(!ec && again == value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_syntax(text);
  check_quote(text);
  for (std::size_t i = 0; i < text.size() && i < 8; ++i) {
    (void)shim::go_json_quote_byte(static_cast<unsigned char>(text[i]));
  }
  return 0;
}
