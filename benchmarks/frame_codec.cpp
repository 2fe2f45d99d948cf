// frame_codec: what the ttrpc frame codec costs per frame, with no socket in the way.
//
//   * encode: append_frame() of a payload into a reused buffer (what a writer does).
//   * decode: FrameDecoder fed a stream of back-to-back frames in chunks of a given size
//     (a socket read returns 64 KiB, 4 KiB or, worst case, a few bytes), taking every
//     complete frame out with next().
//   * envelope: the ttrpc Request / Response messages around a payload (wire::), encoded
//     by the caller and decoded by the receiver, as one unary call does once each way.
//
// Each case runs for about `seconds`, 5 times; the median is printed with the heap
// allocations per operation (counted by the replaced global operator new below).
//
//   frame_codec [seconds-per-case=0.2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "ttrpc/frame.h"
// The envelope codec is internal to libshim (not a public header) but is the other half
// of what every call pays, so it is measured too.
#include "../libshim/src/ttrpc/wire.h"

// ---- allocation counting (this binary only) ----------------------------------------

namespace {
std::size_t allocation_count = 0;  // single-threaded benchmark: no atomics needed
}

// noinline: see ttrpc_roundtrip.cpp (GCC's -Wmismatched-new-delete otherwise).
#define BENCH_NOINLINE __attribute__((noinline))
BENCH_NOINLINE void* operator new(std::size_t size) {
  ++allocation_count;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
BENCH_NOINLINE void* operator new[](std::size_t size) { return operator new(size); }
BENCH_NOINLINE void operator delete(void* p) noexcept { std::free(p); }
BENCH_NOINLINE void operator delete[](void* p) noexcept { std::free(p); }
BENCH_NOINLINE void operator delete(void* p, std::size_t) noexcept { std::free(p); }
BENCH_NOINLINE void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

// ---- benchmark --------------------------------------------------------------------

namespace {

using namespace shim::ttrpc;
using Clock = std::chrono::steady_clock;

// Keeps the optimiser from dropping work whose result is otherwise unused.
template <typename T>
void keep(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

struct Sample {
  double ns_per_op = 0;
  double allocs_per_op = 0;
};

// Runs `batch` (which performs `ops_per_batch` operations) until `seconds` have passed.
Sample measure_once(double seconds, std::size_t ops_per_batch, const std::function<void()>& batch) {
  batch();  // warm caches and buffers before counting
  std::size_t ops = 0;
  std::size_t allocs_before = allocation_count;
  auto start = Clock::now();
  auto stop_at = start + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(seconds));
  Clock::time_point now;
  do {
    batch();
    ops += ops_per_batch;
    now = Clock::now();
  } while (now < stop_at);
  double elapsed_ns = std::chrono::duration<double, std::nano>(now - start).count();
  return Sample{elapsed_ns / static_cast<double>(ops),
                static_cast<double>(allocation_count - allocs_before) / static_cast<double>(ops)};
}

Sample measure(double seconds, std::size_t ops_per_batch, const std::function<void()>& batch) {
  std::vector<Sample> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(measure_once(seconds, ops_per_batch, batch));
  std::sort(runs.begin(), runs.end(),
            [](const Sample& a, const Sample& b) { return a.ns_per_op < b.ns_per_op; });
  return runs[runs.size() / 2];
}

void print_row(const char* what, std::size_t payload, const Sample& s) {
  double bytes = static_cast<double>(payload + kHeaderSize);
  std::printf("| %s | %zu | %.1f | %.0f | %.2f |\n", what, payload, s.ns_per_op,
              bytes / s.ns_per_op * 1e9 / (1 << 20), s.allocs_per_op);
}

void bench_encode(double seconds, std::size_t payload_size) {
  std::string payload(payload_size, 'p');
  std::string out;
  constexpr std::size_t kFrames = 64;
  Sample s = measure(seconds, kFrames, [&] {
    for (std::size_t i = 0; i < kFrames; ++i) {
      out.clear();
      append_frame(out, static_cast<std::uint32_t>(2 * i + 1), FrameType::kRequest, payload);
      keep(out);
    }
  });
  print_row("encode append_frame", payload_size, s);
}

std::string decode_label(std::size_t chunk) {
  return "decode FrameDecoder, " + std::to_string(chunk) + " B reads";
}

void bench_decode(double seconds, std::size_t payload_size, std::size_t chunk) {
  std::string payload(payload_size, 'p');
  std::string stream;
  const std::size_t frames = std::max<std::size_t>(16, (1u << 20) / (payload_size + kHeaderSize));
  for (std::size_t i = 0; i < frames; ++i) {
    append_frame(stream, static_cast<std::uint32_t>(2 * i + 1), FrameType::kResponse, payload);
  }
  bool lost = false;
  Sample s = measure(seconds, frames, [&] {
    FrameDecoder decoder;
    std::size_t got = 0;
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      decoder.feed(std::string_view(stream).substr(at, chunk));
      while (auto frame = decoder.next()) {
        keep(frame->payload);
        ++got;
      }
    }
    lost = lost || got != frames;
  });
  if (lost) {
    std::fprintf(stderr, "decoder lost frames (payload %zu, chunk %zu)\n", payload_size, chunk);
    std::exit(1);
  }
  print_row(decode_label(chunk).c_str(), payload_size, s);
}

void bench_envelope(double seconds, std::size_t payload_size) {
  std::string payload(payload_size, 'p');
  const Metadata metadata;
  Sample request = measure(seconds, 1, [&] {
    std::string frame = wire::request_frame(7, "containerd.task.v2.Task", "State", payload,
                                            std::chrono::seconds(5), metadata);
    wire::RequestView view;
    if (!wire::decode_request(std::string_view(frame).substr(kHeaderSize), &view)) std::exit(1);
    keep(view);
  });
  print_row("request envelope: encode + decode", payload_size, request);
  Sample response = measure(seconds, 1, [&] {
    std::string frame = wire::response_frame(7, shim::Status(), payload);
    std::string decoded;
    if (!wire::decode_response(std::string_view(frame).substr(kHeaderSize), &decoded).ok()) {
      std::exit(1);
    }
    keep(decoded);
  });
  print_row("response envelope: encode + decode", payload_size, response);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 0.2;
  std::printf("ttrpc frame codec (10-byte header + payload), single thread, median of 5 runs "
              "of %.2f s each\n\n",
              seconds);
  std::printf("| operation | payload B | ns/frame | MiB/s (header+payload) | heap allocs/frame |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (std::size_t payload : {0u, 128u, 4096u, 65536u}) bench_encode(seconds, payload);
  for (std::size_t payload : {128u, 4096u}) {
    for (std::size_t chunk : {65536u, 4096u, 16u}) bench_decode(seconds, payload, chunk);
  }
  bench_decode(seconds, 65536, 65536);
  bench_envelope(seconds, 128);
  return 0;
}
