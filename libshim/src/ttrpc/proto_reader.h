// A minimal protobuf wire-format reader for the ttrpc envelope. Hand-decoding keeps the
// request payload a view into the frame (no copy) and avoids libprotobuf's UTF-8 checks,
// which log to stderr for every bad string a peer sends (the shim's stderr is its log).
#pragma once

#include <cstdint>
#include <string_view>

namespace shim::ttrpc {

class ProtoReader {
 public:
  enum WireType : std::uint8_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

  struct Field {
    std::uint32_t number = 0;
    std::uint8_t wire_type = 0;
    std::uint64_t varint = 0;   // kVarint
    std::string_view bytes;     // kLength
  };

  explicit ProtoReader(std::string_view data) : data_(data) {}

  // The next field; false at the end or on malformed input (then failed() is true).
  bool next(Field* field);
  bool failed() const { return failed_; }

 private:
  bool read_varint(std::uint64_t* value);
  bool fail() {
    failed_ = true;
    return false;
  }

  std::string_view data_;
  bool failed_ = false;
};

}  // namespace shim::ttrpc
