#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"

#include "socket/socket_address.h"
#include "support/subprocess.h"

namespace {

// What the test computes independently: printf %s PATH | sha256sum.
std::string sha256sum_of(const std::string& text) {
  shim::test::CommandResult result =
      shim::test::run_command({"sh", "-c", "printf %s \"$0\" | sha256sum", text});
  REQUIRE(result.ok());
  REQUIRE(result.out.size() >= 64);
  return result.out.substr(0, 64);
}

}  // namespace

TEST_CASE("go_clean_path follows Go's path.Clean", "[address]") {
  // The cases of Go's own path.Clean test table.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "."},
      {"abc", "abc"},
      {"abc/def", "abc/def"},
      {"a/b/c", "a/b/c"},
      {".", "."},
      {"..", ".."},
      {"../..", "../.."},
      {"../../abc", "../../abc"},
      {"/abc", "/abc"},
      {"/", "/"},
      {"abc/", "abc"},
      {"abc/def/", "abc/def"},
      {"a/b/c/", "a/b/c"},
      {"./", "."},
      {"../", ".."},
      {"../../", "../.."},
      {"/abc/", "/abc"},
      {"abc//def//ghi", "abc/def/ghi"},
      {"//abc", "/abc"},
      {"///abc", "/abc"},
      {"//abc//", "/abc"},
      {"abc//", "abc"},
      {"abc/./def", "abc/def"},
      {"/./abc/def", "/abc/def"},
      {"abc/.", "abc"},
      {"abc/def/ghi/../jkl", "abc/def/jkl"},
      {"abc/def/../ghi/../jkl", "abc/jkl"},
      {"abc/def/..", "abc"},
      {"abc/def/../..", "."},
      {"/abc/def/../..", "/"},
      {"abc/def/../../..", ".."},
      {"/abc/def/../../..", "/"},
      {"abc/def/../../../ghi/jkl/../../../mno", "../../mno"},
      {"/../abc", "/abc"},
      {"abc/./../def", "def"},
      {"abc//./../def", "def"},
      {"abc/../../././../def", "../../def"},
      {"a/..b/c", "a/..b/c"},
      {"a/.b/..", "a"},
  };
  for (const auto& [input, expected] : cases) {
    INFO("input \"" << input << "\"");
    CHECK(shim::go_clean_path(input) == expected);
  }
}

TEST_CASE("join_path follows Go's filepath.Join", "[address]") {
  CHECK(shim::join_path({"", "", ""}).empty());
  CHECK(shim::join_path({"/run/example/c.sock", "default", "t1"}) ==
        "/run/example/c.sock/default/t1");
  CHECK(shim::join_path({"/run//example/", "default/", "t1"}) ==
        "/run/example/default/t1");
  CHECK(shim::join_path({"", "ns", "id"}) == "ns/id");
  CHECK(shim::join_path({"/a", "", "b"}) == "/a/b");
  CHECK(shim::join_path({"/run/c.sock", "default", "../other"}) == "/run/c.sock/other");
  CHECK(shim::join_path({"/run/c.sock", "default", "t1", "debug"}) ==
        "/run/c.sock/default/t1/debug");
}

TEST_CASE("socket_address hashes the cleaned join, like the Go shim", "[address]") {
  // The example verified against containerd 1.6.20's shim (runtime/v2/shim/util.go SocketAddress).
  const std::string hex = sha256sum_of("/run/example/c.sock/default/t1");
  std::string address;
  REQUIRE(shim::socket_address("/run/example/c.sock", "default", "t1", &address).ok());
  CHECK(address == "unix:///run/containerd/s/" + hex);
  CHECK(address.size() == 89);  // observed length of the Go shim's address

  // Uncleaned inputs hash the same cleaned path.
  std::string unclean;
  REQUIRE(shim::socket_address("/run//example/./c.sock/", "default", "t1", &unclean).ok());
  CHECK(unclean == address);

  std::string grouped;
  REQUIRE(shim::socket_address("/run/containerd/containerd.sock", "k8s.io",
                               "0f1e2d3c4b5a", &grouped).ok());
  CHECK(grouped == "unix:///run/containerd/s/" +
                       sha256sum_of("/run/containerd/containerd.sock/k8s.io/0f1e2d3c4b5a"));
}

TEST_CASE("debug_socket_address adds a /debug component", "[address]") {
  std::string address;
  REQUIRE(shim::debug_socket_address("/run/example/c.sock", "default", "t1",
                                     shim::kDefaultSocketDir, &address).ok());
  CHECK(address ==
        "unix:///run/containerd/s/" + sha256sum_of("/run/example/c.sock/default/t1/debug"));
}

TEST_CASE("socket_address honours socket_dir and the unix path limit", "[address]") {
  const std::string hex = sha256sum_of("/run/c.sock/default/t1");
  std::string address;
  REQUIRE(shim::socket_address("/run/c.sock", "default", "t1", "/tmp/shim-s", &address).ok());
  CHECK(address == "unix:///tmp/shim-s/" + hex);

  // containerd 2.3 accepts socket_dir up to 42 bytes: 42 + 1 + 64 = 107.
  const std::string dir42 = "/" + std::string(41, 'd');
  REQUIRE(shim::socket_address("/run/c.sock", "default", "t1", dir42, &address).ok());
  CHECK(address.size() == std::string("unix://").size() + 107);

  const std::string dir43 = "/" + std::string(42, 'd');
  std::string untouched = "unchanged";
  shim::Status status = shim::socket_address("/run/c.sock", "default", "t1", dir43, &untouched);
  CHECK(status.code() == shim::Code::kInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("is 108 bytes"));
  CHECK_THAT(status.message(), Catch::Contains("107-byte"));
  CHECK_THAT(status.message(), Catch::Contains(dir43));
  CHECK(untouched == "unchanged");
}

TEST_CASE("socket_address needs a namespace", "[address]") {
  std::string address;
  shim::Status status = shim::socket_address("/run/c.sock", "", "t1", &address);
  CHECK(status.code() == shim::Code::kInvalidArgument);
  CHECK_THAT(status.message(), Catch::StartsWith("shim namespace cannot be empty"));
}
