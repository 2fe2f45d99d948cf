// Helpers for the cgroup tests: fake cgroupfs trees and a by-hand protobuf decoder (to
// check field numbers on the wire without trusting our generated classes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "shim/fs.h"

namespace cgroup_test {

inline void make_dirs(const std::string& path) { REQUIRE(shim::make_dirs(path, 0755).ok()); }

// Creates `path` (and its directory) with `text`.
inline void write(const std::string& path, const std::string& text) {
  std::size_t slash = path.rfind('/');
  make_dirs(path.substr(0, slash));
  REQUIRE(shim::go_write_file(path, text, 0644).ok());
}

// A minimal protobuf reader: (field number, wire type, varint value or bytes) per field.
struct WireField {
  std::uint32_t number = 0;
  int type = 0;
  std::uint64_t varint = 0;
  std::string bytes;
};

inline std::uint64_t read_varint(const std::string& data, std::size_t* pos) {
  std::uint64_t value = 0;
  for (int shift = 0; *pos < data.size(); shift += 7) {
    auto byte = static_cast<unsigned char>(data[(*pos)++]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  FAIL("truncated varint");
  return 0;
}

inline std::vector<WireField> decode(const std::string& data) {
  std::vector<WireField> fields;
  std::size_t pos = 0;
  while (pos < data.size()) {
    std::uint64_t key = read_varint(data, &pos);
    WireField field;
    field.number = static_cast<std::uint32_t>(key >> 3);
    field.type = static_cast<int>(key & 7);
    if (field.type == 0) {
      field.varint = read_varint(data, &pos);
    } else if (field.type == 2) {
      std::size_t length = read_varint(data, &pos);
      REQUIRE(pos + length <= data.size());
      field.bytes = data.substr(pos, length);
      pos += length;
    } else if (field.type == 1) {
      REQUIRE(pos + 8 <= data.size());
      field.bytes = data.substr(pos, 8);
      pos += 8;
    } else {
      FAIL("unexpected wire type " << field.type);
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

inline const WireField& field(const std::vector<WireField>& fields, std::uint32_t number) {
  for (const WireField& f : fields) {
    if (f.number == number) return f;
  }
  FAIL("field " << number << " missing");
  static WireField none;
  return none;
}

}  // namespace cgroup_test
