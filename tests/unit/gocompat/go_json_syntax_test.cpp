// Go's json.Unmarshal syntax errors, byte for byte. Every expected text below was
// produced by Go (containerd 1.6.20's ctr, whose `run --config` json.Unmarshal's a file).
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "gocompat/go_json_syntax.h"
#include "gocompat/go_compat.h"

namespace {

std::string check(std::string_view text) {
  shim::Status status = shim::go_json_syntax_check(text);
  if (status.ok()) return "ok";
  CHECK(status.code() == shim::Code::kUnknown);
  return status.message();
}

}  // namespace

TEST_CASE("go json syntax: valid documents pass", "[go-json]") {
  for (std::string_view text :
       {"{}", "  [ ]  ", "null", "true", "false", "0", "-0.5e-3", "1.5E+10", "\"\xe9\"",
        R"({"a":[1,{"b":null}],"c":-0.5e-3} )", R"({"memory":{"limit":67109864}})",
        "\"\\u00e9\\n\\\"\"", "\n\t\r 12 \n"}) {
    INFO(text);
    CHECK(check(text) == "ok");
  }
  CHECK(check(std::string(10000, '[') + std::string(10000, ']')) == "ok");
}

TEST_CASE("go json syntax: truncated input", "[go-json]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "unexpected end of JSON input"},
      {" ", "unexpected end of JSON input"},
      {"{", "unexpected end of JSON input"},
      {"\"abc", "unexpected end of JSON input"},
      {"[1,2", "unexpected end of JSON input"},
      {R"({"a":)", "unexpected end of JSON input"},
      {R"({"a")", "unexpected end of JSON input"},
      // Go's eof() feeds a space, which a half-read token rejects.
      {"tr", "invalid character ' ' in literal true (expecting 'u')"},
      {"fals", "invalid character ' ' in literal false (expecting 'e')"},
      {"nul", "invalid character ' ' in literal null (expecting 'l')"},
      {"-", "invalid character ' ' in numeric literal"},
      {"1.", "invalid character ' ' after decimal point in numeric literal"},
      {"1e", "invalid character ' ' in exponent of numeric literal"},
      {"1e+", "invalid character ' ' in exponent of numeric literal"},
  };
  for (const auto& [text, expected] : cases) {
    INFO(text);
    CHECK(check(text) == expected);
  }
}

TEST_CASE("go json syntax: errors name the byte and the context", "[go-json]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"memory": nope})", "invalid character 'o' in literal null (expecting 'u')"},
      {"nulL", "invalid character 'L' in literal null (expecting 'l')"},
      {"truex", "invalid character 'x' after top-level value"},
      {"[1,]", "invalid character ']' looking for beginning of value"},
      {"[1 2]", "invalid character '2' after array element"},
      {R"({"a" 1})", "invalid character '1' after object key"},
      {R"({"a":1 "b":2})", "invalid character '\"' after object key:value pair"},
      {"{,}", "invalid character ',' looking for beginning of object key string"},
      {R"({"a":1,})", "invalid character '}' looking for beginning of object key string"},
      {"[]]", "invalid character ']' after top-level value"},
      {"{} x", "invalid character 'x' after top-level value"},
      {R"({"a":1}})", "invalid character '}' after top-level value"},
      {R"({"a":1}{"b":2})", "invalid character '{' after top-level value"},
      {"\"a\x01\"", "invalid character '\\x01' in string literal"},
      {R"("\x")", "invalid character 'x' in string escape code"},
      {R"("\u12G4")", "invalid character 'G' in \\u hexadecimal character escape"},
      {"-a", "invalid character 'a' in numeric literal"},
      {"01", "invalid character '1' after top-level value"},
      {"1.e5", "invalid character 'e' after decimal point in numeric literal"},
      {"1ex", "invalid character 'x' in exponent of numeric literal"},
      {"\n\t\r x", "invalid character 'x' looking for beginning of value"},
      {std::string(10001, '['), "invalid character '[' exceeded max depth"},
  };
  for (const auto& [text, expected] : cases) {
    INFO(text.substr(0, 40));
    CHECK(check(text) == expected);
  }
}

TEST_CASE("go json syntax: bytes are quoted as Go's quoteChar does", "[go-json]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"'", R"('\'')"},          {"\\", R"('\\')"},          {"\x7f", R"('\x7f')"},
      {"\x80", R"('\u0080')"},  {"\xa0", R"('\u00a0')"},    {"\xad", R"('\u00ad')"},
      {"\xe9", "'\xc3\xa9'"},   {"\xff", "'\xc3\xbf'"},      {std::string(1, '\0'), R"('\x00')"},
      {"\x07", R"('\a')"},      {"\x0b", R"('\v')"},         {"\xef\xbb\xbf{}", "'\xc3\xaf'"},
  };
  for (const auto& [text, quoted] : cases) {
    INFO(static_cast<int>(static_cast<unsigned char>(text[0])));
    CHECK(check(text) == "invalid character " + quoted + " looking for beginning of value");
  }
  CHECK(shim::go_json_quote_byte('\n') == R"('\n')");
  CHECK(shim::go_json_quote_byte('"') == R"('"')");
  CHECK(shim::go_json_quote_byte('a') == "'a'");
}

// Found by tests/fuzz/fuzz_go_json (corpus/fuzz_go_json/regression-infinity): 7E771 is
// valid JSON that Boost parses as +inf, which it would print as "Infinity".
TEST_CASE("go json marshal: a number beyond double's range stays valid JSON", "[go-json]") {
  boost::json::value value = boost::json::parse(R"({"a":7E771,"b":[-1e999,1.5]})");
  std::string out = shim::go_json_marshal(value);
  CHECK(out == R"({"a":null,"b":[null,1.5E0]})");
  CHECK(shim::go_json_syntax_check(out).ok());
}
