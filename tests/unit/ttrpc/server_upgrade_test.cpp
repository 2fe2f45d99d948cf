// TtrpcServer's part in a live upgrade (ttrpc/server.h): input suspended and resumed, the
// state saved, and a second server (standing in for the new program) adopting the
// connection: a call that was in flight is answered by it, and a call the client sent
// while input was suspended is served after the handover.
#include <unistd.h>

#include <memory>
#include <mutex>
#include <vector>

#include <catch2/catch.hpp>

#include "support/ttrpc_harness.h"
#include "ttrpc/frame.h"
#include "ttrpc/server.h"

namespace {

using namespace std::chrono_literals;
using shim::test::SyncClient;
using shim::test::TtrpcServerHarness;

// "t.S/Block" is answered only by answer_blocked(); "t.S/Echo" at once.
struct Handlers {
  std::mutex mutex;
  std::vector<shim::ttrpc::Responder> blocked;

  shim::ttrpc::Router router(std::string tag) {
    shim::ttrpc::Router router;
    router.add("t.S", "Block",
               [this](const shim::ttrpc::CallInfo&, std::string_view, shim::ttrpc::Responder r) {
                 std::lock_guard lock(mutex);
                 blocked.push_back(std::move(r));
               });
    router.add("t.S", "Echo",
               [tag](const shim::ttrpc::CallInfo&, std::string_view payload,
                     shim::ttrpc::Responder r) { r.reply(tag + std::string(payload)); });
    return router;
  }
  std::size_t blocked_count() {
    std::lock_guard lock(mutex);
    return blocked.size();
  }
  void answer_blocked(const std::string& payload) {
    std::lock_guard lock(mutex);
    for (auto& r : blocked) r.reply(payload);
    blocked.clear();
  }
};

}  // namespace

TEST_CASE("TtrpcServer: suspended input waits, resumed, it is served", "[ttrpc][upgrade]") {
  Handlers handlers;
  TtrpcServerHarness harness(handlers.router("a:"));
  SyncClient client(harness.socket_path());
  REQUIRE(client.call("t.S", "Echo", "1").payload == "a:1");
  harness.io().run([&] { harness.server().suspend_input(); });
  auto pending = client.call_async("t.S", "Echo", "2");
  CHECK(pending.wait_for(100ms) == std::future_status::timeout);
  harness.io().run([&] { harness.server().resume_input(); });
  REQUIRE(pending.wait_for(5s) == std::future_status::ready);
  CHECK(pending.get().payload == "a:2");
}

// A refused upgrade suspends and resumes in one loop turn: the connections must live on
// (containerd takes a closed shim connection for a dead shim).
TEST_CASE("TtrpcServer: suspended and resumed at once, connections live on", "[ttrpc][upgrade]") {
  Handlers handlers;
  TtrpcServerHarness harness(handlers.router("a:"));
  SyncClient client(harness.socket_path());
  REQUIRE(client.call("t.S", "Echo", "1").payload == "a:1");
  for (int i = 0; i < 3; ++i) {
    harness.io().run([&] {
      harness.server().suspend_input();
      harness.server().resume_input();
    });
    auto reply = client.call("t.S", "Echo", std::to_string(i));
    CHECK(reply.status.ok());
    CHECK(reply.payload == "a:" + std::to_string(i));
  }
  SyncClient second(harness.socket_path());
  CHECK(second.call("t.S", "Echo", "new").payload == "a:new");
  CHECK(harness.server().connection_count() == 2);
}

TEST_CASE("TtrpcServer: a connection handed to another server keeps its calls",
          "[ttrpc][upgrade]") {
  Handlers old_handlers, new_handlers;
  TtrpcServerHarness old_server(old_handlers.router("old:"));
  SyncClient client(old_server.socket_path());
  auto in_flight = client.call_async("t.S", "Block", "w");
  REQUIRE(shim::test::eventually([&] { return old_handlers.blocked_count() == 1; }));

  shim::ttrpc::SavedServer saved;
  bool written = false;
  old_server.io().run([&] {
    old_server.server().suspend_input();
    written = old_server.server().replies_written();
    REQUIRE(old_server.server().save_for_upgrade(&saved).ok());
  });
  CHECK(written);
  REQUIRE(saved.listeners.size() == 1);
  REQUIRE(saved.connections.size() == 1);
  REQUIRE(saved.connections[0].calls.size() == 1);
  // Sent while suspended: it waits in the socket, and the new server reads it.
  auto later = client.call_async("t.S", "Echo", "after");
  CHECK(later.wait_for(100ms) == std::future_status::timeout);

  // The new program gets the same socket (a dup here: the old server still closes its
  // own fd) and the call in flight as a request frame, then the unread bytes.
  std::string input;
  for (const auto& call : saved.connections[0].calls) {
    shim::ttrpc::append_frame(input, call.stream_id, shim::ttrpc::FrameType::kRequest,
                              call.message);
  }
  input += saved.connections[0].received;
  const int fd = ::dup(saved.connections[0].fd);
  REQUIRE(fd >= 0);
  TtrpcServerHarness new_server(new_handlers.router("new:"));
  new_server.io().run([&] { new_server.server().adopt_connection(fd, "", input); });
  REQUIRE(shim::test::eventually([&] { return new_handlers.blocked_count() == 1; }));
  new_handlers.answer_blocked("exited");
  REQUIRE(in_flight.wait_for(5s) == std::future_status::ready);
  CHECK(in_flight.get().payload == "exited");
  REQUIRE(later.wait_for(5s) == std::future_status::ready);
  CHECK(later.get().payload == "new:after");
  CHECK(client.call("t.S", "Echo", "3").payload == "new:3");
}
