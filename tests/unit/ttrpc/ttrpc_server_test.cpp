// TtrpcServer + TtrpcClient over real unix sockets: concurrency, deadlines, errors,
// shutdown. Raw-byte checks are in ttrpc_server_wire_test.cpp.
#include "ttrpc/server.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <random>
#include <thread>

#include "shim/ttrpc/client.h"
#include "support/ttrpc_harness.h"
#include "support/unix_stream.h"
#include "ttrpc_test_service.h"

namespace shim::ttrpc {
namespace {

using namespace test_service;  // with the harness names

TEST_CASE("unary round trip with payload and metadata", "[ttrpc]") {
  Fixture f;
  SyncClient client("unix://" + f.server.socket_path());
  auto echo = client.call("test.Echo", "Echo", "hello");
  CHECK(echo.status.ok());
  CHECK(echo.payload == "hello");

  auto empty = client.call("test.Echo", "Echo", "");
  CHECK(empty.status.ok());
  CHECK(empty.payload.empty());

  CallOptions options;
  options.metadata = {{"k", "v1"}, {"other", "x"}, {"k", "v2"}};
  auto meta = client.call("test.Echo", "Meta", "", options);
  CHECK(meta.status.ok());
  CHECK(meta.payload == "none;k=v1;other=x;k=v2;first-k=v1");

  options.timeout = 10s;
  CHECK(client.call("test.Echo", "Meta", "", options).payload.starts_with("deadline;"));
}

TEST_CASE("plain path works as client address", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  CHECK(client.call("test.Echo", "Echo", "x").payload == "x");
}

TEST_CASE("1000 concurrent calls on one connection complete out of order", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  constexpr int kCalls = 1000;
  std::mutex mutex;
  std::vector<int> completion_order;
  std::vector<CallResult> results(kCalls);
  std::promise<void> all_done;
  for (int i = 0; i < kCalls; ++i) {
    client.client().call("test.Hold", "Hold", std::to_string(i), {},
                         [&, i](Status status, std::string payload) {
                           std::lock_guard lock(mutex);
                           results[i] = CallResult{std::move(status), std::move(payload)};
                           completion_order.push_back(i);
                           if (completion_order.size() == kCalls) all_done.set_value();
                         });
  }
  auto held = f.held.take(kCalls);
  REQUIRE(held.size() == kCalls);
  CHECK(f.server.server().calls_in_flight() == kCalls);

  std::vector<int> expected;
  SECTION("answered in reverse from the test thread") {
    std::sort(held.begin(), held.end(),
              [](const auto& a, const auto& b) { return std::stoi(a.first) > std::stoi(b.first); });
    for (auto& [payload, responder] : held) responder.reply("reply " + payload);
  }
  SECTION("answered in random order from the server thread") {
    std::shuffle(held.begin(), held.end(), std::mt19937(42));
    f.server.io().run([&] {
      for (auto& [payload, responder] : held) responder.reply("reply " + payload);
    });
  }
  for (auto& [payload, responder] : held) expected.push_back(std::stoi(payload));

  REQUIRE(all_done.get_future().wait_for(10s) == std::future_status::ready);
  std::lock_guard lock(mutex);
  CHECK(completion_order == expected);  // replies are written in the order given
  for (int i = 0; i < kCalls; ++i) {
    CHECK(results[i].status.ok());
    CHECK(results[i].payload == "reply " + std::to_string(i));
  }
  CHECK(eventually([&] { return f.server.server().calls_in_flight() == 0; }));
}

TEST_CASE("client deadline: DeadlineExceeded locally, server drops the late reply", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  CallOptions options;
  options.timeout = 50ms;
  auto start = std::chrono::steady_clock::now();
  auto result = client.call("test.Hold", "Hold", "late", options);
  CHECK(std::chrono::steady_clock::now() - start >= 50ms);
  CHECK(result.status == Status(Code::kDeadlineExceeded, "context deadline exceeded"));

  auto held = f.held.take(1);
  CHECK(eventually([&] { return held[0].second.done(); }));  // the server's own deadline
  CHECK(f.server.server().calls_in_flight() == 0);
  held[0].second.reply("too late");
  // The connection still works and the late reply reached nobody.
  CHECK(client.call("test.Echo", "Echo", "after").payload == "after");
}

TEST_CASE("server answers DeadlineExceeded itself and drops the late reply", "[ttrpc]") {
  Fixture f;
  UnixStream stream(f.server.socket_path());
  REQUIRE(stream.write_all(request_frame_bytes(1, "test.Hold", "Hold", "p", 30'000'000)));
  auto result = raw_response(stream, 1);
  CHECK(result.status == Status(Code::kDeadlineExceeded, "context deadline exceeded"));
  CHECK(result.payload.empty());

  auto held = f.held.take(1);
  CHECK(held[0].second.done());
  held[0].second.reply("too late");
  held[0].second.fail(Status(Code::kInternal, "also late"));
  REQUIRE(stream.write_all(request_frame_bytes(3, "test.Echo", "Echo", "next")));
  auto next = raw_response(stream, 3);  // not the late reply for stream 1
  CHECK(next.status.ok());
  CHECK(next.payload == "next");
}

TEST_CASE("a reply before the deadline cancels it", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  CallOptions options;
  options.timeout = 200ms;
  auto pending = client.call_async("test.Hold", "Hold", "x", options);
  auto held = f.held.take(1);
  held[0].second.reply("in time");
  auto result = pending.get();
  CHECK(result.status.ok());
  CHECK(result.payload == "in time");
  std::this_thread::sleep_for(250ms);  // past the deadline: nothing more may arrive
  CHECK(client.call("test.Echo", "Echo", "ok").payload == "ok");
  CHECK(f.server.server().calls_in_flight() == 0);
}

TEST_CASE("unknown service and method answer Unimplemented like Go", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  CHECK(client.call("foo.Bar", "Echo").status == Status(Code::kUnimplemented, "service foo.Bar"));
  CHECK(client.call("test.Echo", "Nope").status == Status(Code::kUnimplemented, "method Nope"));
}

TEST_CASE("handler errors map to status codes", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  CHECK(client.call("test.Fail", "Status").status ==
        Status(Code::kNotFound, "thing t1: not found"));
  CHECK(client.call("test.Fail", "Runtime").status == Status(Code::kUnknown, "boom"));
  CHECK(client.call("test.Fail", "Drop").status ==
        Status(Code::kInternal, "ttrpc: handler dropped the call"));
  auto first = client.call("test.Fail", "ReplyThenThrow");
  CHECK(first.status.ok());
  CHECK(first.payload == "first");
  CHECK(f.server.server().calls_in_flight() == 0);
}

TEST_CASE("a responder dropped later on another thread answers Internal", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  auto pending = client.call_async("test.Hold", "Hold", "x");
  { auto held = f.held.take(1); }  // destroyed here, on the test thread
  CHECK(pending.get().status == Status(Code::kInternal, "ttrpc: handler dropped the call"));
  CHECK(eventually([&] { return f.server.server().calls_in_flight() == 0; }));
}

TEST_CASE("graceful shutdown finishes an in-flight reply", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  std::promise<Status> closed;
  client.client().on_close([&closed](Status status) { closed.set_value(status); });
  auto pending = client.call_async("test.Hold", "Hold", "x");
  auto held = f.held.take(1);

  std::promise<void> done;
  f.server.server().shutdown([&done] { done.set_value(); });
  f.server.io().drain();
  CHECK_THROWS(UnixStream(f.server.socket_path()));  // no longer accepting
  auto done_future = done.get_future();
  CHECK(done_future.wait_for(50ms) == std::future_status::timeout);  // still busy

  held[0].second.reply("finished");
  auto result = pending.get();
  CHECK(result.status.ok());
  CHECK(result.payload == "finished");
  CHECK(done_future.wait_for(5s) == std::future_status::ready);
  CHECK(f.server.server().connection_count() == 0);
  CHECK(closed.get_future().wait_for(5s) == std::future_status::ready);
}

// Go's ttrpc client may report ErrClosed for a reply that arrived just before the
// connection's end (client.go dispatch): the peer closes first, or the linger ends it.
TEST_CASE("graceful shutdown leaves an idle connection for its peer to close", "[ttrpc]") {
  HeldCalls held_calls;
  ServerOptions options;
  options.shutdown_linger = 10s;  // far beyond this test's waits
  test::TtrpcServerHarness server(test_router(held_calls), options);
  UnixStream stream(server.socket_path());
  REQUIRE(stream.write_all(request_frame_bytes(1, "test.Hold", "Hold", "x")));
  auto held = held_calls.take(1);
  std::promise<void> done;
  server.server().shutdown([&done] { done.set_value(); });
  held[0].second.reply("last");
  CHECK(raw_response(stream, 1).payload == "last");

  auto done_future = done.get_future();
  CHECK_FALSE(stream.wait_closed(300ms));  // idle, yet open: the peer has the reply first
  CHECK(done_future.wait_for(0ms) == std::future_status::timeout);
  REQUIRE(stream.write_all(request_frame_bytes(3, "test.Echo", "Echo", "late")));
  CHECK(raw_response(stream, 3).payload == "late");  // still served meanwhile
  stream.close();
  CHECK(done_future.wait_for(5s) == std::future_status::ready);
  CHECK(server.server().connection_count() == 0);
}

TEST_CASE("graceful shutdown closes an idle connection after the linger", "[ttrpc]") {
  HeldCalls held;
  ServerOptions options;
  options.shutdown_linger = 200ms;
  test::TtrpcServerHarness server(test_router(held), options);
  UnixStream stream(server.socket_path());
  REQUIRE(stream.write_all(request_frame_bytes(1, "test.Echo", "Echo", "x")));
  CHECK(raw_response(stream, 1).payload == "x");

  std::promise<void> done;
  auto started = std::chrono::steady_clock::now();
  server.server().shutdown([&done] { done.set_value(); });
  CHECK(stream.wait_closed(5s));
  auto waited = std::chrono::steady_clock::now() - started;
  CHECK(waited >= 200ms);
  CHECK(done.get_future().wait_for(5s) == std::future_status::ready);
}

TEST_CASE("close drops pending calls, clients see Unavailable", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  auto pending = client.call_async("test.Hold", "Hold", "x");
  auto held = f.held.take(1);
  f.server.server().close();
  CHECK(pending.get().status == Status(Code::kUnavailable, "ttrpc: closed"));
  held[0].second.reply("nobody listens");  // must not crash
  CHECK(eventually([&] { return f.server.server().calls_in_flight() == 0; }));
  CHECK(client.call("test.Echo", "Echo").status == Status(Code::kUnavailable, "ttrpc: closed"));
}

TEST_CASE("many connections are served at once", "[ttrpc]") {
  Fixture f;
  std::vector<std::unique_ptr<UnixStream>> streams;
  for (int i = 0; i < 20; ++i)
    streams.push_back(std::make_unique<UnixStream>(f.server.socket_path()));
  for (auto& stream : streams)
    REQUIRE(stream->write_all(request_frame_bytes(1, "test.Hold", "Hold")));
  auto held = f.held.take(20);
  CHECK(f.server.server().connection_count() == 20);
  for (auto& [payload, responder] : held) responder.reply("r");
  for (auto& stream : streams) CHECK(raw_response(*stream, 1).payload == "r");
}

}  // namespace
}  // namespace shim::ttrpc
