// SHA-256 (FIPS 180-4): the shim socket name is the hex digest of a path, as in the Go
// shim, so the C++ and Go shims of one group find each other's socket.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shim {

class Sha256 {
 public:
  using Digest = std::array<std::uint8_t, 32>;

  Sha256();
  // Feeds more input; may be called any number of times before finish().
  void update(std::string_view data);
  // Pads, returns the digest and resets the object for a new message.
  Digest finish();

 private:
  void compress(const std::uint8_t* block);
  void reset();

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

// Lowercase hex of the digest of `data` (64 characters), like Go's fmt "%x".
std::string sha256_hex(std::string_view data);
std::string to_hex(const Sha256::Digest& digest);

}  // namespace shim
