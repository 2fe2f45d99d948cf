// Loading the captured wire fixtures of tests/data/wire (see the README there).
#pragma once

#include <cstdint>
#include <string>

namespace shim::test {

// Bytes of tests/data/wire/<name>.hex ('#' lines are comments, the rest is hex).
// Throws std::runtime_error when the file is missing or malformed.
std::string load_wire_hex(const std::string& name);

// One captured ttrpc frame, split as on the wire.
struct CapturedFrame {
  std::string raw;      // header + payload, exactly as captured
  std::uint32_t length = 0;
  std::uint32_t stream_id = 0;
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::string payload;  // raw without the 10-byte header
};

// Loads <name>.hex and decodes its header independently of libshim's frame code.
// Throws when the announced length does not match the captured payload size.
CapturedFrame load_captured_frame(const std::string& name);

}  // namespace shim::test
