// A minimal protobuf wire-format splitter: the bootstrap decoder must look at which
// fields a message carries before choosing the class to parse it with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shim::detail {

enum class WireType : int {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

struct WireField {
  std::uint32_t number = 0;
  WireType type = WireType::kVarint;
  std::uint64_t varint = 0;      // kVarint only
  std::string_view payload;      // kLengthDelimited: the bytes; fixed: the raw bytes
  std::size_t offset = 0;        // where the tag starts
};

// Splits `bytes` into its top-level fields. Groups are rejected: nothing in the shim
// protocol uses them. On malformed input returns false with `error` saying where.
bool split_fields(std::string_view bytes, std::vector<WireField>* fields, std::string* error);

}  // namespace shim::detail
