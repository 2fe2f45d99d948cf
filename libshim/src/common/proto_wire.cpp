#include "common/proto_wire.h"

#include <fmt/format.h>

namespace shim::detail {
namespace {

constexpr std::uint32_t kMaxFieldNumber = (1u << 29) - 1;

}  // namespace

bool ProtoReader::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

bool ProtoReader::varint(std::uint64_t* value) {
  std::uint64_t result = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ == bytes_.size()) return false;
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

bool ProtoReader::take(std::uint64_t size, std::string_view* out) {
  if (std::uint64_t{bytes_.size() - pos_} < size) return false;
  *out = bytes_.substr(pos_, static_cast<std::size_t>(size));
  pos_ += static_cast<std::size_t>(size);
  return true;
}

bool ProtoReader::next(WireField* field) {
  if (failed() || pos_ == bytes_.size()) return false;
  *field = WireField{};
  field->offset = pos_;
  std::uint64_t tag = 0;
  if (!varint(&tag)) return fail(fmt::format("truncated tag at offset {}", field->offset));
  std::uint64_t number = tag >> 3;
  auto type = static_cast<int>(tag & 7);
  if (number == 0 || number > kMaxFieldNumber) {
    return fail(fmt::format("invalid field number {} at offset {}", number, field->offset));
  }
  field->number = static_cast<std::uint32_t>(number);
  field->type = static_cast<WireType>(type);
  switch (field->type) {
    case WireType::kVarint:
      if (varint(&field->varint)) return true;
      return fail(fmt::format("field {}: truncated or overlong varint", number));
    case WireType::kFixed64:
      if (take(8, &field->payload)) return true;
      return fail(fmt::format("field {}: truncated fixed64", number));
    case WireType::kFixed32:
      if (take(4, &field->payload)) return true;
      return fail(fmt::format("field {}: truncated fixed32", number));
    case WireType::kLengthDelimited: {
      std::uint64_t length = 0;
      if (!varint(&length)) return fail(fmt::format("field {}: truncated length", number));
      if (take(length, &field->payload)) return true;
      return fail(fmt::format("field {}: length {} runs past the end", number, length));
    }
    case WireType::kStartGroup:
    case WireType::kEndGroup:
      return fail(fmt::format("field {}: unexpected group", number));
  }
  return fail(fmt::format("invalid wire type {} at offset {}", type, field->offset));
}

bool split_fields(std::string_view bytes, std::vector<WireField>* fields, std::string* error) {
  fields->clear();
  ProtoReader reader(bytes);
  for (WireField field; reader.next(&field);) fields->push_back(field);
  if (!reader.failed()) return true;
  *error = reader.error();
  return false;
}

void append_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

std::size_t varint_size(std::uint64_t value) {
  std::size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

}  // namespace shim::detail
