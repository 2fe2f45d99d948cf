// The service the ttrpc server tests run: echo, metadata, held calls and failures.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "shim/ttrpc/router.h"
#include "support/ttrpc_harness.h"
#include "support/unix_stream.h"

namespace shim::ttrpc::test_service {

// The harness names the server tests use (they pull them in with this namespace).
using namespace std::chrono_literals;
using test::CallResult;
using test::eventually;
using test::read_frame;
using test::request_frame_bytes;
using test::SyncClient;
using test::TtrpcServerHarness;
using test::UnixStream;

// Calls whose handler keeps the responder, for the test to answer later.
class HeldCalls {
 public:
  void add(std::string payload, Responder responder) {
    std::lock_guard lock(mutex_);
    calls_.emplace_back(std::move(payload), std::move(responder));
    changed_.notify_all();
  }
  // Waits for `count` held calls and takes them.
  std::vector<std::pair<std::string, Responder>> take(std::size_t count) {
    std::unique_lock lock(mutex_);
    bool enough = changed_.wait_for(lock, 10s, [&] { return calls_.size() >= count; });
    REQUIRE(enough);
    return std::exchange(calls_, {});
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<std::string, Responder>> calls_;
};

inline Router test_router(HeldCalls& held) {
  Router router;
  router.add("test.Echo", "Echo", [](const CallInfo&, std::string_view payload, Responder r) {
    r.reply(std::string(payload));
  });
  router.add("test.Echo", "Meta", [](const CallInfo& call, std::string_view, Responder r) {
    std::string out = call.deadline ? "deadline;" : "none;";
    for (const auto& [key, value] : call.metadata) out += key + "=" + value + ";";
    out += "first-k=" + std::string(call.metadata_value("k"));
    r.reply(out);
  });
  router.add("test.Hold", "Hold", [&held](const CallInfo&, std::string_view payload, Responder r) {
    held.add(std::string(payload), std::move(r));
  });
  router.add("test.Fail", "Status", [](const CallInfo&, std::string_view, Responder) {
    throw StatusError(not_found("thing t1"));
  });
  router.add("test.Fail", "Runtime", [](const CallInfo&, std::string_view, Responder) {
    throw std::runtime_error("boom");
  });
  router.add("test.Fail", "Drop", [](const CallInfo&, std::string_view, Responder) {});
  router.add("test.Echo", "Huge", [](const CallInfo&, std::string_view, Responder r) {
    r.reply(std::string(kMaxMessageSize, 'h'));  // + 5 bytes of Response framing
  });
  router.add("test.Fail", "ReplyThenThrow", [](const CallInfo&, std::string_view, Responder r) {
    r.reply("first");
    throw std::runtime_error("ignored");
  });
  return router;
}

struct Fixture {
  HeldCalls held;
  TtrpcServerHarness server{test_router(held)};
};

inline CallResult raw_response(UnixStream& stream, std::uint32_t expected_id) {
  auto frame = read_frame(stream);
  REQUIRE(frame);
  CHECK(frame->header.stream_id == expected_id);
  CHECK(frame->header.type == 2);
  CHECK(frame->header.flags == 0);
  return test::decode_response(frame->payload);
}

}  // namespace shim::ttrpc::test_service
