#include "support/wire_capture.h"

#include <cctype>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace shim::test {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::uint32_t be32(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

}  // namespace

std::string load_wire_hex(const std::string& name) {
  return load_data_hex("wire/" + name + ".hex");
}

std::string load_data_hex(const std::string& relative) {
  const std::string path = fmt::format("{}/tests/data/{}", LIBSHIM_SOURCE_DIR, relative);
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot open {}", path));
  std::string bytes;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '#') continue;
    int high = -1;
    for (char c : line) {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      int digit = hex_digit(c);
      if (digit < 0) throw std::runtime_error(fmt::format("{}: bad hex digit '{}'", path, c));
      if (high < 0) {
        high = digit;
      } else {
        bytes.push_back(static_cast<char>(high << 4 | digit));
        high = -1;
      }
    }
    if (high >= 0) throw std::runtime_error(fmt::format("{}: odd number of hex digits", path));
  }
  return bytes;
}

CapturedFrame load_captured_frame(const std::string& name) {
  CapturedFrame frame;
  frame.raw = load_wire_hex(name);
  if (frame.raw.size() < 10) {
    throw std::runtime_error(
        fmt::format("{}: {} bytes, shorter than a header", name, frame.raw.size()));
  }
  frame.length = be32(frame.raw, 0);
  frame.stream_id = be32(frame.raw, 4);
  frame.type = static_cast<std::uint8_t>(frame.raw[8]);
  frame.flags = static_cast<std::uint8_t>(frame.raw[9]);
  frame.payload = frame.raw.substr(10);
  if (frame.length != frame.payload.size()) {
    throw std::runtime_error(fmt::format("{}: header says {} bytes, {} captured", name,
                                         frame.length, frame.payload.size()));
  }
  return frame;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

shim::pb::Timestamp timestamp(std::int64_t seconds, std::int32_t nanos) {
  shim::pb::Timestamp ts;
  ts.set_seconds(seconds);
  ts.set_nanos(nanos);
  return ts;
}

}  // namespace shim::test
