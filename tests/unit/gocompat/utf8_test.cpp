#include "gocompat/utf8.h"

#include <catch2/catch.hpp>

#include <string>

#include "ttrpc/wire.h"

namespace shim::detail {
namespace {

// Go's strings.ToValidUTF8 cases (strings_test.go's toValidUTF8Tests, "\uFFFD" as the
// replacement): a run of invalid bytes becomes one U+FFFD, valid runes stay.
TEST_CASE("to_valid_utf8 replaces each run of invalid bytes as Go does", "[gocompat]") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(to_valid_utf8("") == "");
  CHECK(to_valid_utf8("abc") == "abc");
  CHECK(to_valid_utf8("\xEF\xBF\xBD") == r);  // a real U+FFFD is valid
  CHECK(to_valid_utf8("a\xff"
                      "b\xC0\xAF"
                      "c\xff") == "a" + r + "b" + r + "c" + r);
  CHECK(to_valid_utf8("\xed\xa0\x80") == r);      // a surrogate
  CHECK(to_valid_utf8("\xf4\x90\x80\x80") == r);  // past U+10FFFF
  CHECK(to_valid_utf8("\xe2\x82") == r);          // truncated
  CHECK(to_valid_utf8("\xc3\xa9\xff\xc3\xa9") == "\xc3\xa9" + r + "\xc3\xa9");
  CHECK(is_valid_utf8(to_valid_utf8("\x80\x80\x80 x \xfe")));
}

// An error quoting bytes nobody checked still decodes in containerd (Go protobuf
// refuses a Status whose message is not UTF-8).
TEST_CASE("a response's status message goes out as valid UTF-8", "[gocompat][ttrpc]") {
  Status status(Code::kInvalidArgument, "/m.wasm imports \xff\xfe.x, which WASI does not provide");
  std::string frame = ttrpc::wire::response_frame(1, status, "");
  std::string payload;
  Status decoded = ttrpc::wire::decode_response(std::string_view(frame).substr(10), &payload);
  CHECK(decoded.code() == Code::kInvalidArgument);
  CHECK(decoded.message() == "/m.wasm imports \xEF\xBF\xBD.x, which WASI does not provide");
  // A valid message is sent as it is.
  Status plain(Code::kNotFound, "no such process \xc3\xa9");
  frame = ttrpc::wire::response_frame(2, plain, "");
  CHECK(ttrpc::wire::decode_response(std::string_view(frame).substr(10), &payload).message() ==
        plain.message());
}

}  // namespace
}  // namespace shim::detail
