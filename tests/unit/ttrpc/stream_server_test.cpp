// StreamServer (shim/ttrpc/stream_server.h) and TtrpcClient::adopt: ttrpc over a
// connection a program already holds. A pty pair plays the agent's virtio-serial port
// (a character device, relayed through a socket pair): the server serves the master, a
// thread copies between the slave and the client's socket.
#include "shim/ttrpc/stream_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>

#include <catch2/catch.hpp>

#include "shim/stdio/pty.h"
#include "shim/ttrpc/client.h"
#include "support/io_thread.h"

namespace shim::ttrpc {
namespace {

using namespace std::chrono_literals;

Router echo_router() {
  Router router;
  router.add("test.Echo", "Echo", [](const CallInfo&, std::string_view payload, Responder r) {
    r.reply(std::string(payload));
  });
  return router;
}

// One call on `client`, waited for.
std::pair<Status, std::string> echo(TtrpcClient& client, std::string payload) {
  std::promise<std::pair<Status, std::string>> done;
  client.call("test.Echo", "Echo", std::move(payload), {}, [&](Status s, std::string p) {
    done.set_value({s, std::move(p)});
  });
  auto future = done.get_future();
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  return future.get();
}

std::shared_ptr<TtrpcClient> adopted_client(test::IoThread& io, int fd) {
  auto client = TtrpcClient::create(io.executor());
  std::promise<Status> adopted;
  client->adopt(fd, [&](Status s) { adopted.set_value(s); });
  REQUIRE(adopted.get_future().get().ok());
  return client;
}

// Copies both ways between `a` and `b` until one end closes or `stop` is set.
void copy_both_ways(int a, int b, const std::atomic<bool>& stop) {
  char buffer[4096];
  while (!stop) {
    pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    if (::poll(fds, 2, 50) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) return;
      int to = i == 0 ? b : a;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = ::write(to, buffer + off, static_cast<std::size_t>(n - off));
        if (w <= 0) return;
        off += w;
      }
    }
  }
}

TEST_CASE("stream server: ttrpc over a character device, relayed", "[ttrpc]") {
  test::IoThread io;
  Pty pty;
  REQUIRE(Pty::open(&pty).ok());
  for (int fd : {pty.master(), pty.slave()}) {
    termios raw{};
    REQUIRE(::tcgetattr(fd, &raw) == 0);
    ::cfmakeraw(&raw);
    REQUIRE(::tcsetattr(fd, TCSANOW, &raw) == 0);
  }
  auto server =
      io.run([&] { return std::make_shared<StreamServer>(io.executor(), echo_router()); });
  Status served = io.run([&] { return server->serve(::dup(pty.master())); });
  REQUIRE(served.ok());

  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  std::atomic<bool> stop{false};
  std::thread copier(copy_both_ways, pair[1], pty.slave(), std::cref(stop));
  auto client = adopted_client(io, pair[0]);

  auto [status, payload] = echo(*client, "over the port");
  CHECK(status.ok());
  CHECK(payload == "over the port");
  // A payload larger than the relay's buffer and the pty's, in order.
  std::string big(300 * 1024, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  auto [big_status, big_payload] = echo(*client, big);
  CHECK(big_status.ok());
  CHECK((big_payload == big));
  CHECK(io.run([&] { return server->connection_count(); }) == 1);

  stop = true;
  copier.join();
  client->close();
  io.run([&] { server.reset(); });
  ::close(pair[1]);
}

TEST_CASE("stream server: a socket is served as it is, adopt refuses a non-socket", "[ttrpc]") {
  test::IoThread io;
  auto server =
      io.run([&] { return std::make_shared<StreamServer>(io.executor(), echo_router()); });
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  REQUIRE(io.run([&] { return server->serve(pair[1]); }).ok());
  auto client = adopted_client(io, pair[0]);
  auto [status, payload] = echo(*client, "direct");
  CHECK(status.ok());
  CHECK(payload == "direct");

  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  auto refused = TtrpcClient::create(io.executor());
  std::promise<Status> adopted;
  refused->adopt(pipe_fds[0], [&](Status s) { adopted.set_value(s); });
  Status s = adopted.get_future().get();
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("ttrpc: adopt fd") != std::string::npos);
  CHECK_FALSE(refused->connected());
  ::close(pipe_fds[1]);
  client->close();
  io.run([&] { server.reset(); });
}

}  // namespace
}  // namespace shim::ttrpc
