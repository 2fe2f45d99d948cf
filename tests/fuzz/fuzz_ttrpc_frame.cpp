// The ttrpc frame reassembly and envelope decoding, fed a byte stream as a peer sends it.
// Checked, beyond "no crash, no leak, no undefined behaviour":
//  - FrameDecoder yields the same frames whether the stream comes at once, a byte at a
//    time or in pieces whose sizes the input picks (a socket read may stop anywhere);
//  - a decoded header re-encodes to the bytes it came from;
//  - a payload that decodes as a Request (or Response) decodes to the same values again
//    after being re-encoded with request_frame (response_frame; its status message
//    made valid UTF-8).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "gocompat/utf8.h"
#include "ttrpc/frame.h"
#include "ttrpc/wire.h"

namespace {

using shim::ttrpc::Frame;
using shim::ttrpc::FrameDecoder;
namespace wire = shim::ttrpc::wire;

// A small limit next to the real one, so that oversized frames (reported once, their
// payload skipped across reads) occur in small inputs too.
constexpr std::uint32_t kSmallLimit = 300;

bool same_frame(const Frame& a, const Frame& b) {
  return a.header == b.header && a.payload == b.payload && a.oversized == b.oversized;
}

// Feeds `stream` in pieces of the sizes `size_of(i)` gives and collects every frame.
template <class SizeOf>
std::vector<Frame> decode_in_pieces(std::string_view stream, std::uint32_t limit, SizeOf size_of) {
  FrameDecoder decoder(limit);
  std::vector<Frame> frames;
  for (std::size_t i = 0; !stream.empty(); ++i) {
    std::size_t size = std::min<std::size_t>(stream.size(), size_of(i));
    decoder.feed(stream.substr(0, size));
    stream.remove_prefix(size);
    while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
  }
  return frames;
}

void check_same(const std::vector<Frame>& expected, const std::vector<Frame>& got) {
  FUZZ_CHECK(expected.size() == got.size());
  for (std::size_t i = 0; i < expected.size(); ++i) FUZZ_CHECK(same_frame(expected[i], got[i]));
}

void check_request_round_trip(const Frame& frame) {
  wire::RequestView request;
  if (!wire::decode_request(frame.payload, &request)) return;
  std::optional<std::chrono::nanoseconds> timeout;
  if (request.timeout_nano != 0) timeout = std::chrono::nanoseconds(request.timeout_nano);
  std::string again = wire::request_frame(frame.header.stream_id, request.service, request.method,
                                          request.payload, timeout, request.metadata);
  FUZZ_CHECK(again.size() >= shim::ttrpc::kHeaderSize);
  auto header = shim::ttrpc::decode_header(again.data());
  FUZZ_CHECK(header.length == again.size() - shim::ttrpc::kHeaderSize);
  FUZZ_CHECK(header.stream_id == frame.header.stream_id);
  wire::RequestView decoded;
  FUZZ_CHECK(
      wire::decode_request(std::string_view(again).substr(shim::ttrpc::kHeaderSize), &decoded));
  FUZZ_CHECK(decoded.service == request.service);
  FUZZ_CHECK(decoded.method == request.method);
  FUZZ_CHECK(decoded.payload == request.payload);
  FUZZ_CHECK(decoded.timeout_nano == request.timeout_nano);
  FUZZ_CHECK(decoded.metadata == request.metadata);
}

void check_response_round_trip(const Frame& frame) {
  std::string payload;
  shim::Status status = wire::decode_response(frame.payload, &payload);
  std::string again = wire::response_frame(frame.header.stream_id, status, payload);
  std::string payload_again;
  shim::Status status_again = wire::decode_response(
      std::string_view(again).substr(shim::ttrpc::kHeaderSize), &payload_again);
  FUZZ_CHECK(status_again.code() == status.code());
  // A status message goes out as valid UTF-8 (what Go's protobuf accepts): the same
  // when it was, each run of invalid bytes one U+FFFD when not.
  FUZZ_CHECK(status_again.message() == shim::detail::to_valid_utf8(status.message()));
  FUZZ_CHECK(shim::detail::is_valid_utf8(status_again.message()));
  FUZZ_CHECK(payload_again == payload);
}

void check_frames(const std::vector<Frame>& frames, std::string_view stream) {
  std::size_t offset = 0;
  for (const Frame& frame : frames) {
    FUZZ_CHECK(offset < stream.size());
    auto bytes = shim::ttrpc::encode_header(frame.header);
    FUZZ_CHECK(stream.substr(offset, bytes.size()) == std::string_view(bytes.data(), bytes.size()));
    offset += bytes.size() + frame.header.length;
    FUZZ_CHECK(frame.oversized || frame.payload.size() == frame.header.length);
    if (frame.oversized) continue;
    check_request_round_trip(frame);
    check_response_round_trip(frame);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  for (std::uint32_t limit : {shim::ttrpc::kMaxMessageSize, kSmallLimit}) {
    std::vector<Frame> whole =
        decode_in_pieces(stream, limit, [](std::size_t) { return SIZE_MAX; });
    check_frames(whole, stream);
    check_same(whole, decode_in_pieces(stream, limit, [](std::size_t) { return 1; }));
    // Piece sizes 1..64 taken from the stream itself: deterministic, and mutations of
    // the input move the cut points.
    check_same(whole, decode_in_pieces(stream, limit, [stream](std::size_t i) -> std::size_t {
                 return 1 + static_cast<unsigned char>(stream[(i * 7) % stream.size()]) % 64;
               }));
  }
  return 0;
}
