#include "ttrpc/proto_reader.h"

namespace shim::ttrpc {

bool ProtoReader::read_varint(std::uint64_t* value) {
  std::uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (data_.empty()) return false;
    auto byte = static_cast<std::uint8_t>(data_.front());
    data_.remove_prefix(1);
    if (shift == 63 && byte > 1) return false;  // more than 64 bits
    result |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

bool ProtoReader::next(Field* field) {
  if (failed_ || data_.empty()) return false;
  std::uint64_t tag = 0;
  if (!read_varint(&tag)) return fail();
  std::uint64_t number = tag >> 3;
  if (number == 0 || number > 0x1fffffff) return fail();
  field->number = static_cast<std::uint32_t>(number);
  field->wire_type = static_cast<std::uint8_t>(tag & 7);
  field->varint = 0;
  field->bytes = {};
  switch (field->wire_type) {
    case kVarint:
      if (!read_varint(&field->varint)) return fail();
      return true;
    case kFixed64:
    case kFixed32: {
      std::size_t size = field->wire_type == kFixed64 ? 8 : 4;
      if (data_.size() < size) return fail();
      field->bytes = data_.substr(0, size);
      data_.remove_prefix(size);
      return true;
    }
    case kLength: {
      std::uint64_t size = 0;
      if (!read_varint(&size) || size > data_.size()) return fail();
      field->bytes = data_.substr(0, static_cast<std::size_t>(size));
      data_.remove_prefix(static_cast<std::size_t>(size));
      return true;
    }
    default:
      return fail();  // groups (3, 4) and invalid types: not in these messages
  }
}

}  // namespace shim::ttrpc
