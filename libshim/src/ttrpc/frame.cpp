#include "ttrpc/frame.h"

#include <algorithm>

namespace shim::ttrpc {

namespace {

void put_u32(char* out, std::uint32_t value) {
  out[0] = static_cast<char>((value >> 24) & 0xff);
  out[1] = static_cast<char>((value >> 16) & 0xff);
  out[2] = static_cast<char>((value >> 8) & 0xff);
  out[3] = static_cast<char>(value & 0xff);
}

std::uint32_t get_u32(const char* in) {
  auto byte = [in](int i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])); };
  return (byte(0) << 24) | (byte(1) << 16) | (byte(2) << 8) | byte(3);
}

}  // namespace

std::array<char, kHeaderSize> encode_header(const FrameHeader& header) {
  std::array<char, kHeaderSize> out{};
  put_u32(out.data(), header.length);
  put_u32(out.data() + 4, header.stream_id);
  out[8] = static_cast<char>(header.type);
  out[9] = static_cast<char>(header.flags);
  return out;
}

FrameHeader decode_header(const char* bytes) {
  FrameHeader header;
  header.length = get_u32(bytes);
  header.stream_id = get_u32(bytes + 4);
  header.type = static_cast<std::uint8_t>(bytes[8]);
  header.flags = static_cast<std::uint8_t>(bytes[9]);
  return header;
}

void append_frame(std::string& out, std::uint32_t stream_id, FrameType type,
                  std::string_view payload, std::uint8_t flags) {
  FrameHeader header{static_cast<std::uint32_t>(payload.size()), stream_id,
                     static_cast<std::uint8_t>(type), flags};
  auto bytes = encode_header(header);
  out.reserve(out.size() + kHeaderSize + payload.size());
  out.append(bytes.data(), bytes.size());
  out.append(payload);
}

void FrameDecoder::feed(std::string_view bytes) {
  // Payload of an oversized frame: drop it without buffering.
  if (discard_remaining_ != 0 && pending_bytes() == 0) {
    auto skip = static_cast<std::size_t>(std::min<std::uint64_t>(discard_remaining_, bytes.size()));
    discard_remaining_ -= skip;
    bytes.remove_prefix(skip);
  }
  if (bytes.empty()) return;
  compact();
  buffer_.append(bytes);
}

std::optional<Frame> FrameDecoder::next() {
  if (discard_remaining_ != 0) {
    auto skip = static_cast<std::size_t>(std::min<std::uint64_t>(discard_remaining_, pending_bytes()));
    discard_remaining_ -= skip;
    consumed_ += skip;
    if (discard_remaining_ != 0) {
      compact();
      return std::nullopt;
    }
  }
  if (pending_bytes() < kHeaderSize) {
    compact();
    return std::nullopt;
  }
  Frame frame;
  frame.header = decode_header(buffer_.data() + consumed_);
  if (frame.header.length > max_payload_) {
    // Report at once; the payload is skipped by this and later calls and by feed().
    consumed_ += kHeaderSize;
    discard_remaining_ = frame.header.length;
    auto skip = static_cast<std::size_t>(std::min<std::uint64_t>(discard_remaining_, pending_bytes()));
    discard_remaining_ -= skip;
    consumed_ += skip;
    compact();
    frame.oversized = true;
    return frame;
  }
  if (pending_bytes() - kHeaderSize < frame.header.length) {
    compact();
    buffer_.reserve(kHeaderSize + frame.header.length);  // one allocation for a big frame
    return std::nullopt;
  }
  frame.payload.assign(buffer_, consumed_ + kHeaderSize, frame.header.length);
  consumed_ += kHeaderSize + frame.header.length;
  if (consumed_ == buffer_.size()) compact();
  return frame;
}

void FrameDecoder::compact() {
  if (consumed_ == 0) return;
  if (consumed_ == buffer_.size()) {
    buffer_.clear();
  } else {
    buffer_.erase(0, consumed_);
  }
  consumed_ = 0;
  // Do not keep a big buffer around after one large frame: a thousand connections that
  // each sent one would hold it a thousand times. containerd's frames are far smaller.
  if (buffer_.empty() && buffer_.capacity() > (16u << 10)) buffer_.shrink_to_fit();
}

}  // namespace shim::ttrpc
