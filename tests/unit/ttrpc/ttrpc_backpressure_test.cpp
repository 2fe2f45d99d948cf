// Back-pressure and memory bounds of the ttrpc server against hostile peers: a peer that
// pipelines requests and never reads its replies stops being read (it holds a bounded
// amount), one with too many unanswered calls too, while other connections are served;
// nothing is lost once the peer reads again.
#include "ttrpc/server.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include <thread>

#include "support/ttrpc_harness.h"
#include "support/unix_stream.h"
#include "ttrpc_test_service.h"

namespace shim::ttrpc {
namespace {

using namespace test_service;

// Writes requests without ever reading until the socket refuses more for a while; the
// number of whole requests it took.
std::size_t pipeline_until_refused(int fd, const std::string& service, const std::string& method,
                                   const std::string& payload, std::size_t limit) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::size_t sent = 0;
  std::string pending;
  auto stalled_since = std::chrono::steady_clock::now();
  while (sent < limit) {
    if (pending.empty()) pending = request_frame_bytes(static_cast<std::uint32_t>(2 * sent + 1), service, method, payload);
    ssize_t n = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL);
    if (n > 0) {
      pending.erase(0, static_cast<std::size_t>(n));
      if (pending.empty()) ++sent;
      stalled_since = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - stalled_since > 500ms) break;  // refused for good
    std::this_thread::sleep_for(5ms);
  }
  // A frame cut short stays in the socket: incomplete, it is simply not answered.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return sent;
}

TEST_CASE("a peer that never reads its replies is not read from past the bound", "[ttrpc]") {
  HeldCalls held;
  ServerOptions options;
  options.max_pending_reply_bytes = 64 * 1024;
  TtrpcServerHarness server(test_router(held), options);
  UnixStream hostile(server.socket_path());
  const std::string payload(1024, 'x');
  // 100,000 requests of 1 KiB would be ~100 MiB of replies held for this peer.
  std::size_t sent = pipeline_until_refused(hostile.fd(), "test.Echo", "Echo", payload, 100'000);
  INFO("requests taken before the server stopped reading: " << sent);
  // Bound: the server's 64 KiB plus what the kernel buffers in both directions.
  CHECK(sent < 8'000);
  CHECK(sent > 32);

  // Meanwhile another connection is served at once.
  SyncClient other(server.socket_path());
  auto echo = other.call("test.Echo", "Echo", "still here");
  CHECK(echo.status.ok());
  CHECK(echo.payload == "still here");

  // Reading again: every request taken is answered, in order, none lost.
  std::size_t answered = 0;
  for (; answered < sent; ++answered) {
    auto frame = read_frame(hostile);
    if (!frame || frame->header.stream_id != 2 * answered + 1) break;
  }
  CHECK(answered == sent);
}

TEST_CASE("a peer with too many unanswered calls is not read from until some finish", "[ttrpc]") {
  HeldCalls held;
  ServerOptions options;
  options.max_calls_per_connection = 64;
  TtrpcServerHarness server(test_router(held), options);
  UnixStream hostile(server.socket_path());
  std::string frames;
  for (std::uint32_t i = 0; i < 200; ++i) frames += request_frame_bytes(2 * i + 1, "test.Hold", "Hold", "p");
  REQUIRE(hostile.write_all(frames));
  auto first = held.take(64);
  std::this_thread::sleep_for(200ms);
  CHECK(server.server().calls_in_flight() == 64);  // the other 136 wait in the socket

  // Below half again: reading resumes, the rest arrive. The refill races the last of the
  // 40 replies (reading pauses at 64 and resumes only below 32), so it ends between 25
  // and 64 calls in flight; never above the limit.
  for (std::size_t i = 0; i < 40; ++i) first[i].second.reply("done");
  REQUIRE(test::eventually([&] { return server.server().calls_in_flight() > 24; }, 5s));
  CHECK(server.server().calls_in_flight() <= 64);
  for (std::size_t i = 40; i < first.size(); ++i) first[i].second.reply("done");
  std::size_t total = first.size();
  while (total < 200) {
    auto more = held.take(1);
    total += more.size();
    for (auto& call : more) call.second.reply("done");
  }
  CHECK(total == 200);
  for (std::uint32_t i = 0; i < 200; ++i) REQUIRE(read_frame(hostile));
}

}  // namespace
}  // namespace shim::ttrpc
