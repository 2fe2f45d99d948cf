// The protobuf wire format by hand, in one place: reading a message field by field
// (ProtoReader), splitting one into its top-level fields (split_fields), writing varints.
// Why by hand: the ttrpc envelope is decoded without copying the request payload and
// without libprotobuf's UTF-8 checks, which log to stderr (the shim's log) for every bad
// string a peer sends; the bootstrap decoder must see which fields a message carries
// before it chooses the class to parse it with.
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
  std::uint64_t varint = 0;  // kVarint only
  std::string_view payload;  // kLengthDelimited: the bytes; fixed: the raw bytes
  std::size_t offset = 0;    // where the tag starts
};

// Reads the fields of one message in order. Groups are refused: nothing the shim reads
// uses them.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : bytes_(bytes) {}

  // The next field; false at the end or on malformed input (then failed() is true and
  // error() says what and where).
  bool next(WireField* field);
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool varint(std::uint64_t* value);
  bool take(std::uint64_t size, std::string_view* out);
  bool fail(std::string message);

  std::string_view bytes_;
  std::size_t pos_ = 0;
  std::string error_;
};

// Splits `bytes` into its top-level fields. On malformed input returns false with
// `error` saying where.
bool split_fields(std::string_view bytes, std::vector<WireField>* fields, std::string* error);

// The bytes of `value` as a varint, and how many there are.
void append_varint(std::string& out, std::uint64_t value);
std::size_t varint_size(std::uint64_t value);

}  // namespace shim::detail
