#include "common/proto_wire.h"

#include <fmt/format.h>

namespace shim::detail {
namespace {

constexpr std::uint32_t kMaxFieldNumber = (1u << 29) - 1;

class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : bytes_(bytes) {}

  bool at_end() const { return pos_ == bytes_.size(); }
  std::size_t pos() const { return pos_; }

  bool varint(std::uint64_t* value) {
    std::uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      if (at_end()) return false;
      auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
      if (i == 9 && byte > 1) return false;  // more than 64 bits
      result |= std::uint64_t{byte & 0x7Fu} << (7 * i);
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  bool take(std::uint64_t n, std::string_view* out) {
    if (std::uint64_t{bytes_.size() - pos_} < n) return false;
    *out = bytes_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

bool fail(std::string* error, std::string message) {
  *error = std::move(message);
  return false;
}

bool read_value(Cursor& cursor, WireField* field, std::string* error) {
  switch (field->type) {
    case WireType::kVarint:
      if (cursor.varint(&field->varint)) return true;
      return fail(error, fmt::format("field {}: truncated or overlong varint", field->number));
    case WireType::kFixed64:
      if (cursor.take(8, &field->payload)) return true;
      return fail(error, fmt::format("field {}: truncated fixed64", field->number));
    case WireType::kFixed32:
      if (cursor.take(4, &field->payload)) return true;
      return fail(error, fmt::format("field {}: truncated fixed32", field->number));
    case WireType::kLengthDelimited: {
      std::uint64_t length = 0;
      if (!cursor.varint(&length)) {
        return fail(error, fmt::format("field {}: truncated length", field->number));
      }
      if (!cursor.take(length, &field->payload)) {
        return fail(error, fmt::format("field {}: length {} runs past the end",
                                       field->number, length));
      }
      return true;
    }
    case WireType::kStartGroup:
    case WireType::kEndGroup:
      return fail(error, fmt::format("field {}: unexpected group", field->number));
  }
  return fail(error, fmt::format("field {}: invalid wire type", field->number));
}

}  // namespace

bool split_fields(std::string_view bytes, std::vector<WireField>* fields, std::string* error) {
  fields->clear();
  Cursor cursor(bytes);
  while (!cursor.at_end()) {
    WireField field;
    field.offset = cursor.pos();
    std::uint64_t tag = 0;
    if (!cursor.varint(&tag)) {
      return fail(error, fmt::format("truncated tag at offset {}", field.offset));
    }
    std::uint64_t number = tag >> 3;
    auto type = static_cast<int>(tag & 7);
    if (number == 0 || number > kMaxFieldNumber) {
      return fail(error, fmt::format("invalid field number {} at offset {}", number,
                                     field.offset));
    }
    if (type > 5) {
      return fail(error, fmt::format("invalid wire type {} at offset {}", type, field.offset));
    }
    field.number = static_cast<std::uint32_t>(number);
    field.type = static_cast<WireType>(type);
    if (!read_value(cursor, &field, error)) return false;
    fields->push_back(field);
  }
  return true;
}

}  // namespace shim::detail
