#include "ttrpc/frame.h"

#include <catch2/catch.hpp>

#include <vector>

namespace shim::ttrpc {
namespace {

std::string frame_bytes(std::uint32_t id, std::uint8_t type, std::string_view payload,
                        std::uint8_t flags = 0) {
  auto header = encode_header({static_cast<std::uint32_t>(payload.size()), id, type, flags});
  return std::string(header.data(), header.size()) + std::string(payload);
}

std::vector<Frame> drain(FrameDecoder& decoder) {
  std::vector<Frame> frames;
  while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
  return frames;
}

TEST_CASE("header is big-endian length, id, type, flags", "[ttrpc]") {
  auto bytes = encode_header({0x01020304, 0x0a0b0c0d, 2, 5});
  std::string expected("\x01\x02\x03\x04\x0a\x0b\x0c\x0d\x02\x05", 10);
  CHECK(std::string(bytes.data(), bytes.size()) == expected);
  CHECK(decode_header(expected.data()) == FrameHeader{0x01020304, 0x0a0b0c0d, 2, 5});

  auto high = encode_header({0xfffffffe, 0xffffffff, 0xff, 0xff});
  CHECK(decode_header(high.data()) == FrameHeader{0xfffffffe, 0xffffffff, 0xff, 0xff});
}

TEST_CASE("append_frame writes header and payload in one buffer", "[ttrpc]") {
  std::string out = "x";
  append_frame(out, 7, FrameType::kResponse, "abc");
  CHECK(out == std::string("x\0\0\0\x03\0\0\0\x07\x02\0abc", 14));
  std::string empty;
  append_frame(empty, 9, FrameType::kResponse, "");
  CHECK(empty == std::string("\0\0\0\0\0\0\0\x09\x02\0", 10));
}

TEST_CASE("decoder handles a frame fed byte by byte", "[ttrpc]") {
  FrameDecoder decoder;
  std::string bytes = frame_bytes(3, 1, "hello") + frame_bytes(5, 1, "");
  std::vector<Frame> frames;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    decoder.feed(std::string_view(&bytes[i], 1));
    for (auto& frame : drain(decoder)) frames.push_back(std::move(frame));
    std::size_t fed = i + 1;
    CHECK(frames.size() == (fed < 15 ? 0u : fed < 25 ? 1u : 2u));
    CHECK(decoder.mid_frame() == (fed != 15 && fed != 25));
  }
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].header == FrameHeader{5, 3, 1, 0});
  CHECK(frames[0].payload == "hello");
  CHECK(frames[1].header == FrameHeader{0, 5, 1, 0});
  CHECK(frames[1].payload.empty());
  CHECK_FALSE(decoder.mid_frame());
  CHECK(decoder.pending_bytes() == 0);
}

TEST_CASE("decoder returns many frames from one read", "[ttrpc]") {
  FrameDecoder decoder;
  std::string bytes;
  for (std::uint32_t i = 0; i < 100; ++i) bytes += frame_bytes(2 * i + 1, 1, std::string(i, 'a'));
  bytes += frame_bytes(999, 1, "partial").substr(0, 12);  // header + 2 payload bytes
  decoder.feed(bytes);
  auto frames = drain(decoder);
  REQUIRE(frames.size() == 100);
  for (std::uint32_t i = 0; i < 100; ++i) {
    CHECK(frames[i].header.stream_id == 2 * i + 1);
    CHECK(frames[i].payload == std::string(i, 'a'));
  }
  CHECK(decoder.mid_frame());
  CHECK(decoder.pending_bytes() == 12);
  decoder.feed("rtial");
  auto rest = drain(decoder);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].payload == "partial");
  CHECK_FALSE(decoder.mid_frame());
}

TEST_CASE("decoder accepts exactly the 4 MiB limit", "[ttrpc]") {
  FrameDecoder decoder;
  std::string payload(kMaxMessageSize, 'p');
  payload.front() = 'A';
  payload.back() = 'Z';
  decoder.feed(frame_bytes(1, 1, payload));
  auto frames = drain(decoder);
  REQUIRE(frames.size() == 1);
  CHECK_FALSE(frames[0].oversized);
  CHECK(frames[0].payload.size() == kMaxMessageSize);
  CHECK(frames[0].payload == payload);
}

TEST_CASE("decoder reports 4 MiB + 1 as oversized and skips it", "[ttrpc]") {
  std::string big = frame_bytes(7, 1, std::string(kMaxMessageSize + 1, 'x'));
  std::string next = frame_bytes(9, 1, "next");

  SECTION("in one piece") {
    FrameDecoder decoder;
    decoder.feed(big + next);
    auto frames = drain(decoder);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].oversized);
    CHECK(frames[0].header == FrameHeader{kMaxMessageSize + 1, 7, 1, 0});
    CHECK(frames[0].payload.empty());
    CHECK_FALSE(frames[1].oversized);
    CHECK(frames[1].payload == "next");
  }
  SECTION("in 64 KiB reads, never buffering the skipped payload") {
    FrameDecoder decoder;
    std::string all = big + next;
    std::vector<Frame> frames;
    std::size_t max_pending = 0;
    for (std::size_t at = 0; at < all.size(); at += 65536) {
      decoder.feed(std::string_view(all).substr(at, 65536));
      max_pending = std::max(max_pending, decoder.pending_bytes());
      for (auto& frame : drain(decoder)) frames.push_back(std::move(frame));
      if (frames.size() == 1 && at + 65536 < big.size()) CHECK(decoder.mid_frame());
    }
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].oversized);
    CHECK(frames[1].payload == "next");
    CHECK(max_pending <= 65536);
  }
}

TEST_CASE("decoder honours a smaller limit", "[ttrpc]") {
  FrameDecoder decoder(4);
  decoder.feed(frame_bytes(1, 1, "12345") + frame_bytes(3, 1, "1234"));
  auto frames = drain(decoder);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].oversized);
  CHECK(frames[0].header.length == 5);
  CHECK(frames[1].payload == "1234");
}

TEST_CASE("decoder keeps unknown types and flags raw", "[ttrpc]") {
  FrameDecoder decoder;
  decoder.feed(frame_bytes(1, 0x7f, "?", 0xee) + frame_bytes(3, 3, "", kFlagRemoteClosed));
  auto frames = drain(decoder);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].header.type == 0x7f);
  CHECK(frames[0].header.flags == 0xee);
  CHECK(frames[1].header.type == 3);
  CHECK(frames[1].header.flags == kFlagRemoteClosed);
}

TEST_CASE("decoder on garbage: every byte is accounted for", "[ttrpc]") {
  // Garbage is only garbage to the layers above: the decoder just splits it into frames
  // by the lengths it announces. A huge length is reported oversized and skipped.
  FrameDecoder decoder;
  std::string garbage = "\xff\xff\xff\xff\x01\x02\x03\x04\x05\x06" + std::string(100, '\xff');
  decoder.feed(garbage);
  auto frames = drain(decoder);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].oversized);
  CHECK(frames[0].header.length == 0xffffffffu);
  CHECK(decoder.mid_frame());  // still discarding the announced payload
  CHECK(decoder.pending_bytes() == 0);

  FrameDecoder short_garbage;
  short_garbage.feed(std::string_view("\0\0\0", 3));
  CHECK_FALSE(short_garbage.next());
  CHECK(short_garbage.mid_frame());
  CHECK(short_garbage.pending_bytes() == 3);
}

}  // namespace
}  // namespace shim::ttrpc
