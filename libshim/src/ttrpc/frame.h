// The ttrpc frame: a 10-byte big-endian header followed by the payload.
//   bytes 0-3 payload length, 4-7 stream id, 8 message type, 9 flags.
#pragma once

#include "shim/ttrpc/call.h"  // kMaxMessageSize

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shim::ttrpc {

inline constexpr std::size_t kHeaderSize = 10;

enum class FrameType : std::uint8_t {
  kRequest = 1,
  kResponse = 2,
  kData = 3,
};

// Flags defined by ttrpc 1.2 streaming; unary calls use none.
inline constexpr std::uint8_t kFlagRemoteClosed = 0x1;
inline constexpr std::uint8_t kFlagRemoteOpen = 0x2;
inline constexpr std::uint8_t kFlagNoData = 0x4;

struct FrameHeader {
  std::uint32_t length = 0;
  std::uint32_t stream_id = 0;
  std::uint8_t type = 0;  // raw byte: unknown types must survive decoding
  std::uint8_t flags = 0;

  friend bool operator==(const FrameHeader&, const FrameHeader&) = default;
};

std::array<char, kHeaderSize> encode_header(const FrameHeader& header);
FrameHeader decode_header(const char* bytes);  // reads exactly kHeaderSize bytes

// Appends header + payload to `out` (one buffer, one write).
void append_frame(std::string& out, std::uint32_t stream_id, FrameType type,
                  std::string_view payload, std::uint8_t flags = 0);

struct Frame {
  FrameHeader header;
  std::string payload;
  // The announced length exceeded the limit: the payload was skipped, not buffered.
  bool oversized = false;
};

// Incremental decoder: feed bytes as they arrive, take complete frames out.
// Frames longer than the limit are reported once (oversized = true, empty payload) as
// soon as their header is read, and their payload bytes are then discarded as they
// arrive, so a peer cannot make us buffer more than the limit.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::uint32_t max_payload = kMaxMessageSize) : max_payload_(max_payload) {}

  void feed(std::string_view bytes);
  std::optional<Frame> next();

  // Bytes of a frame received but not yet complete (0 between frames).
  std::size_t pending_bytes() const { return buffer_.size() - consumed_; }
  // True while the middle of a frame has been received: EOF now means a cut frame.
  bool mid_frame() const { return pending_bytes() != 0 || discard_remaining_ != 0; }
  // The bytes received and not yet taken out as frames (a live upgrade carries them over).
  std::string_view pending() const { return std::string_view(buffer_).substr(consumed_); }
  // Skipping the rest of an oversized frame.
  bool discarding() const { return discard_remaining_ != 0; }

 private:
  void compact();

  std::uint32_t max_payload_;
  std::string buffer_;
  std::size_t consumed_ = 0;
  std::uint64_t discard_remaining_ = 0;
};

}  // namespace shim::ttrpc
