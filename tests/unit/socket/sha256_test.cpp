#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "socket/sha256.h"
#include "support/subprocess.h"

namespace {

// Hex digest of `data` as computed by coreutils' sha256sum.
std::string sha256sum(const std::string& data) {
  shim::test::CommandOptions options;
  options.stdin_data = data;
  shim::test::CommandResult result = shim::test::run_command({"sha256sum"}, options);
  REQUIRE(result.ok());
  REQUIRE(result.out.size() >= 64);
  return result.out.substr(0, 64);
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-4 example vectors", "[sha256]") {
  CHECK(shim::sha256_hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(shim::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(shim::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(shim::sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                         "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu") ==
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST_CASE("sha256 of one million 'a' in one call and in odd-sized pieces", "[sha256]") {
  const std::string expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  const std::string million(1'000'000, 'a');
  CHECK(shim::sha256_hex(million) == expected);

  shim::Sha256 hasher;
  std::size_t done = 0;
  for (std::size_t piece = 1; done < million.size(); piece = piece % 97 + 13) {
    std::size_t n = std::min(piece, million.size() - done);
    hasher.update(std::string_view(million).substr(done, n));
    done += n;
  }
  CHECK(shim::to_hex(hasher.finish()) == expected);
  // finish() resets: the same object hashes the next message from scratch.
  hasher.update("abc");
  CHECK(shim::to_hex(hasher.finish()) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("sha256 agrees with sha256sum around the padding boundaries", "[sha256]") {
  std::mt19937 random(20261129);
  std::uniform_int_distribution<int> byte(0, 255);
  // 55/56/63/64/65 straddle the one-block/two-block padding cases.
  for (std::size_t length : {1u, 55u, 56u, 63u, 64u, 65u, 119u, 1000u}) {
    std::string data;
    for (std::size_t i = 0; i < length; ++i) data.push_back(static_cast<char>(byte(random)));
    INFO("length " << length);
    CHECK(shim::sha256_hex(data) == sha256sum(data));
  }
}

TEST_CASE("sha256 gives the same digest however the input is split", "[sha256]") {
  const std::string data = "/run/containerd/containerd.sock/k8s.io/0123456789abcdef0123456789";
  const std::string whole = shim::sha256_hex(data);
  for (std::size_t split = 0; split <= data.size(); ++split) {
    shim::Sha256 hasher;
    hasher.update(std::string_view(data).substr(0, split));
    hasher.update(std::string_view(data).substr(split));
    CHECK(shim::to_hex(hasher.finish()) == whole);
  }
}
