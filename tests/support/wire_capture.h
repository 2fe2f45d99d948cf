// Loading the captured wire fixtures of tests/data/wire (see the README there), and the
// small helpers the wire-compatibility tests compare them with.
#pragma once

#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "shim/pb/timestamp.pb.h"

namespace shim::test {

// Bytes of tests/data/wire/<name>.hex ('#' lines are comments, the rest is hex).
// Throws std::runtime_error when the file is missing or malformed.
std::string load_wire_hex(const std::string& name);
// The same for any hex fixture, tests/data/<relative> (e.g. "bootstrap/x.hex").
std::string load_data_hex(const std::string& relative);

// One captured ttrpc frame, split as on the wire.
struct CapturedFrame {
  std::string raw;  // header + payload, exactly as captured
  std::uint32_t length = 0;
  std::uint32_t stream_id = 0;
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::string payload;  // raw without the 10-byte header
};

// Loads <name>.hex and decodes its header independently of libshim's frame code.
// Throws when the announced length does not match the captured payload size.
CapturedFrame load_captured_frame(const std::string& name);

// Lower-case hex of `bytes`: a CHECK on two of these shows where frames differ.
std::string hex(const std::string& bytes);

// `bytes` decoded as `Message`; the test stops (REQUIRE) when they do not parse.
template <class Message>
Message parse_as(const std::string& bytes) {
  Message message;
  REQUIRE(message.ParseFromString(bytes));
  return message;
}

shim::pb::Timestamp timestamp(std::int64_t seconds, std::int32_t nanos);

}  // namespace shim::test
