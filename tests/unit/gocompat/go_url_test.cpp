// Go's url.PathUnescape and url.QueryUnescape (gocompat/go_url.h), as containerd's stdio
// URIs and binary:// logger arguments need them.
#include <catch2/catch.hpp>

#include "gocompat/go_url.h"

TEST_CASE("go_url_unescape: %XX is a byte, '+' is a space only in a query", "[go-url]") {
  std::string out;
  REQUIRE(shim::go_url_unescape("/a%20b+c%2Fd", shim::GoUnescape::kPath, &out));
  CHECK(out == "/a b+c/d");
  REQUIRE(shim::go_url_unescape("a%20b+c%3d", shim::GoUnescape::kQuery, &out));
  CHECK(out == "a b c=");
  REQUIRE(shim::go_url_unescape("%00%ff", shim::GoUnescape::kQuery, &out));
  CHECK(out == std::string("\0\xff", 2));
}

TEST_CASE("go_url_unescape: a bad escape fails and is quoted as Go quotes it", "[go-url]") {
  std::string out, bad;
  CHECK_FALSE(shim::go_url_unescape("/a%zzb", shim::GoUnescape::kPath, &out, &bad));
  CHECK(bad == "%zz");
  CHECK_FALSE(shim::go_url_unescape("/a%2", shim::GoUnescape::kPath, &out, &bad));
  CHECK(bad == "%2");
  CHECK_FALSE(shim::go_url_unescape("%", shim::GoUnescape::kQuery, &out));
}
