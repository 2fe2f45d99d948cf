#include "fork_ready.h"

#include <cstdint>
#include <optional>

namespace shim_wasm {
namespace {

constexpr std::string_view kHeader("\0asm\x01\0\0\0", 8);
constexpr std::uint8_t kSectionStart = 8;

// An unsigned LEB128 of at most 32 bits at bytes[*at], advancing *at.
std::optional<std::uint32_t> read_u32(std::string_view bytes, std::size_t* at) {
  std::uint32_t value = 0;
  for (int shift = 0; shift < 35 && *at < bytes.size(); shift += 7) {
    auto b = static_cast<std::uint8_t>(bytes[(*at)++]);
    value |= static_cast<std::uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  return std::nullopt;
}

}  // namespace

bool can_instantiate_before_fork(std::string_view bytes) {
  if (!bytes.starts_with(kHeader)) return false;
  std::size_t at = kHeader.size();
  while (at < bytes.size()) {
    auto id = static_cast<std::uint8_t>(bytes[at++]);
    std::optional<std::uint32_t> size = read_u32(bytes, &at);
    if (!size || *size > bytes.size() - at) return false;
    if (id == kSectionStart) return false;
    at += *size;
  }
  return true;
}

}  // namespace shim_wasm
