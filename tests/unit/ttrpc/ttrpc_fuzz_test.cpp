// Robustness: random and mutated frames thrown at the server must never crash it, and
// afterwards it still answers, with no call state left behind.
#include "ttrpc/server.h"

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <random>
#include <thread>

#include "shim/ttrpc/router.h"
#include "support/ttrpc_harness.h"
#include "support/unix_stream.h"

namespace shim::ttrpc {
namespace {

using namespace std::chrono_literals;

// Handlers run on the one executor thread: plain counters are enough.
struct Hits {
  std::size_t echo = 0;
  std::size_t later = 0;
};

Router fuzz_router(std::shared_ptr<Hits> hits) {
  Router router;
  router.add("f.S", "Echo", [hits](const CallInfo&, std::string_view payload, Responder r) {
    ++hits->echo;
    r.reply(std::string(payload));
  });
  router.add("f.S", "Throw", [](const CallInfo&, std::string_view, Responder) {
    throw std::runtime_error("thrown");
  });
  router.add("f.S", "Drop", [](const CallInfo&, std::string_view, Responder) {});
  // Kept unanswered: the server's deadline answers, or the connection closing drops
  // them, or they are dropped in bulk (Internal). Handlers run on the one executor thread.
  auto kept = std::make_shared<std::vector<Responder>>();
  router.add("f.S", "Later", [kept, hits](const CallInfo&, std::string_view, Responder r) {
    ++hits->later;
    kept->push_back(std::move(r));
    if (kept->size() > 500) kept->clear();
  });
  return router;
}

// Mutations keep every frame's length field equal to the bytes that follow, so the
// stream stays in step and most of the 100,000 frames reach the server's frame handling
// (a desynchronised stream would swallow everything after it). Plain garbage that
// breaks the framing is sent once per connection, at its end.
class FrameFuzzer {
 public:
  explicit FrameFuzzer(std::uint32_t seed) : rng_(seed) {}

  std::string next() {
    switch (pick(10)) {
      case 0: return random_frame();
      case 1: return with_header_byte(valid_request(), 8, static_cast<std::uint8_t>(pick(256)));
      case 2: return truncated(valid_request());
      case 3: return resized(valid_request());
      case 4: return with_header_byte(valid_request(), 4 + pick(4), static_cast<std::uint8_t>(pick(256)));
      case 5: return valid_request();
      default: return flipped(valid_request());
    }
  }

  std::string garbage() { return random_bytes(pick(300)); }

 private:
  std::uint32_t pick(std::uint32_t bound) { return std::uniform_int_distribution<std::uint32_t>(0, bound - 1)(rng_); }

  std::string random_bytes(std::size_t size) {
    std::string bytes(size, '\0');
    for (auto& byte : bytes) byte = static_cast<char>(pick(256));
    return bytes;
  }

  std::string valid_request() {
    static const char* kMethods[] = {"Echo", "Throw", "Drop", "Later", "Nope"};
    std::uint32_t id = pick(1000) * 2 + 1;
    std::string service = pick(8) == 0 ? "x.Y" : "f.S";
    std::int64_t timeout = pick(4) == 0 ? static_cast<std::int64_t>(pick(5'000'000)) : 0;
    ttrpc::Metadata metadata;
    if (pick(2) == 0) metadata.emplace_back("k", std::string(pick(8), static_cast<char>('a' + pick(26))));
    return test::request_frame_bytes(id, service, kMethods[pick(5)], random_bytes(pick(64)),
                                     timeout, metadata);
  }

  static std::string frame_of(FrameHeader header, std::string_view payload) {
    header.length = static_cast<std::uint32_t>(payload.size());
    auto bytes = encode_header(header);
    return std::string(bytes.data(), bytes.size()) + std::string(payload);
  }

  std::string random_frame() {
    return frame_of({0, static_cast<std::uint32_t>(rng_()), static_cast<std::uint8_t>(pick(5)),
                     static_cast<std::uint8_t>(pick(256))},
                    random_bytes(pick(128)));
  }

  static std::string with_header_byte(std::string frame, std::size_t at, std::uint8_t value) {
    frame[at] = static_cast<char>(value);
    return frame;
  }

  // The Request message cut short: a decode error (or a shorter valid message).
  std::string truncated(const std::string& frame) {
    std::string_view message = std::string_view(frame).substr(kHeaderSize);
    return frame_of(decode_header(frame.data()), message.substr(0, pick(static_cast<std::uint32_t>(message.size()))));
  }

  // A random length below the limit, the message cut or padded to it; rarely near or
  // above the limit (an oversized frame's payload is sent and skipped by the server).
  std::string resized(const std::string& frame) {
    std::size_t length = pick(200);
    std::uint32_t dice = pick(5000);
    if (dice == 0) length = kMaxMessageSize - pick(1000);
    if (dice == 1) length = kMaxMessageSize + 1 + pick(1000);
    std::string message = frame.substr(kHeaderSize);
    if (message.size() > length) message.resize(length);
    while (message.size() < length) message.push_back(static_cast<char>(pick(256)));
    return frame_of(decode_header(frame.data()), message);
  }

  std::string flipped(std::string frame) {
    // Any byte after the length field: id, type, flags and the Request message.
    int flips = 1 + static_cast<int>(pick(4));
    for (int i = 0; i < flips; ++i) {
      std::size_t at = 4 + pick(static_cast<std::uint32_t>(frame.size() - 4));
      frame[at] = static_cast<char>(frame[at] ^ static_cast<char>(1u << pick(8)));
    }
    return frame;
  }

  std::mt19937 rng_;
};

TEST_CASE("server survives 100,000 random and mutated frames", "[ttrpc]") {
  auto hits = std::make_shared<Hits>();
  test::TtrpcServerHarness server(fuzz_router(hits));
  constexpr int kConnections = 4;
  constexpr int kFramesPerConnection = 25'000;

  std::vector<std::thread> threads;
  for (int c = 0; c < kConnections; ++c) {
    threads.emplace_back([&server, c] {
      FrameFuzzer fuzzer(static_cast<std::uint32_t>(1234 + c));
      test::UnixStream stream(server.socket_path());
      // Replies are read all along: the server stops reading a peer whose replies pile
      // up (back-pressure), so a writer that never reads would wait forever, as it would
      // on a Go ttrpc server.
      std::thread reader([fd = stream.fd()] {
        char scratch[65536];
        while (::recv(fd, scratch, sizeof(scratch), 0) > 0) {
        }
      });
      std::string batch;
      bool open = true;
      for (int i = 0; i < kFramesPerConnection && open; ++i) {
        batch += fuzzer.next();
        if (batch.size() < 4096 && i + 1 < kFramesPerConnection) continue;
        open = stream.write_all(batch);  // the server may drop us; that is allowed
        batch.clear();
      }
      if (open) stream.write_all(fuzzer.garbage());
      ::shutdown(stream.fd(), SHUT_WR);
      reader.join();
    });
  }
  for (auto& thread : threads) thread.join();

  CHECK(test::eventually([&] { return server.server().connection_count() == 0; }));
  CHECK(server.server().calls_in_flight() == 0);  // no call state left behind
  // The mutations left enough requests intact to exercise the handlers.
  auto [echoes, kept] = server.io().run([hits] { return std::pair(hits->echo, hits->later); });
  CHECK(echoes > 3'000);
  CHECK(kept > 3'000);

  test::SyncClient client(server.socket_path());
  auto echo = client.call("f.S", "Echo", "alive");
  CHECK(echo.status.ok());
  CHECK(echo.payload == "alive");
}

}  // namespace
}  // namespace shim::ttrpc
