// shim/linux/vsock.h where this host can run it: the hybrid vsock handshake against a
// unix socket that answers as a VMM does (firecracker docs/vsock.md), and the token
// check on a unix listener. AF_VSOCK itself needs a VM (tests/vm: the agent channel over
// vhost-device-vsock).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "shim/linux/vsock.h"
#include "support/skip.h"
#include "support/temp_dir.h"

namespace {

using namespace std::chrono_literals;

shim::UniqueFd listen_unix(const std::string& path, int backlog = 8) {
  shim::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(fd.get(), backlog) == 0);
  return fd;
}

shim::UniqueFd connect_unix(const std::string& path) {
  shim::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

void send_text(int fd, const std::string& text) {
  REQUIRE(::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()));
}

std::string read_some(int fd) {
  char buffer[128];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

// Accepts one connection, reads its request line and answers `answer` (nothing: closes).
std::thread fake_vmm(int listener, std::string answer, std::string* request) {
  return std::thread([listener, answer, request] {
    shim::UniqueFd c(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    char ch = 0;
    while (::read(c.get(), &ch, 1) == 1) {
      request->push_back(ch);
      if (ch == '\n') break;
    }
    if (answer.empty()) return;
    ::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
    ::read(c.get(), &ch, 1);  // the dialler's first byte after OK arrives here
    request->push_back(ch);
  });
}

}  // namespace

TEST_CASE("hybrid vsock: CONNECT <port>, OK <n>, then the guest's stream", "[vsock]") {
  shim::test::TempDir dir;
  std::string path = dir.sub("vsock.sock");
  shim::UniqueFd listener = listen_unix(path);
  shim::VsockTarget target{.uds_path = path, .port = 1024};
  CHECK(target.describe() == fmt::format("hybrid vsock {}:1024", path));

  std::string request;
  std::thread vmm = fake_vmm(listener.get(), "OK 1073741824\n", &request);
  shim::UniqueFd fd;
  shim::Status dialled = shim::dial_vsock(target, 2000ms, &fd);
  REQUIRE(dialled.ok());
  send_text(fd.get(), "x");
  vmm.join();
  CHECK(request == "CONNECT 1024\nx");
}

TEST_CASE("hybrid vsock: a refused port, an odd answer, no socket", "[vsock]") {
  shim::test::TempDir dir;
  std::string path = dir.sub("vsock.sock");
  shim::VsockTarget target{.uds_path = path, .port = 52};
  shim::UniqueFd fd;

  // Nothing listens at the path yet: worth another try.
  shim::Status none = shim::dial_vsock(target, 500ms, &fd);
  CHECK(none.code() == shim::Code::kUnavailable);
  CHECK(none.message().find(path) != std::string::npos);

  shim::UniqueFd listener = listen_unix(path);
  std::string request;
  // The guest refused (nobody listens on the port): the VMM closes the connection.
  std::thread refused = fake_vmm(listener.get(), "", &request);
  shim::Status closed = shim::dial_vsock(target, 2000ms, &fd);
  refused.join();
  CHECK(closed.code() == shim::Code::kUnavailable);
  CHECK(closed.message().find("closed before OK") != std::string::npos);
  CHECK(request == "CONNECT 52\n");

  std::thread odd = fake_vmm(listener.get(), "NO\n", &request);
  shim::Status answered = shim::dial_vsock(target, 2000ms, &fd);
  odd.join();
  CHECK(answered.code() == shim::Code::kInvalidArgument);
  CHECK(answered.message().find("\"NO\\n\"") != std::string::npos);
  CHECK_FALSE(fd.valid());
}

TEST_CASE("hybrid vsock: no answer in time", "[vsock]") {
  shim::test::TempDir dir;
  std::string path = dir.sub("vsock.sock");
  shim::UniqueFd listener = listen_unix(path);  // the backlog takes the connection
  shim::UniqueFd fd;
  auto started = std::chrono::steady_clock::now();
  shim::Status s = shim::dial_vsock({.uds_path = path, .port = 1}, 300ms, &fd);
  CHECK(s.code() == shim::Code::kDeadlineExceeded);
  CHECK(std::chrono::steady_clock::now() - started < 2s);
}

TEST_CASE("accept_with_token: strangers are closed, the one with the token gets in", "[vsock]") {
  shim::test::TempDir dir;
  std::string path = dir.sub("agent.sock");
  shim::UniqueFd listener = listen_unix(path);
  const std::string token = "3f9a0c1d";

  // Waiting in the backlog before accept_with_token runs: a silent one, a wrong one,
  // one with the token and what follows it.
  shim::UniqueFd silent = connect_unix(path);
  shim::UniqueFd wrong = connect_unix(path);
  send_text(wrong.get(), "3f9a0c1e\n");
  shim::UniqueFd right = connect_unix(path);
  send_text(right.get(), token + "\nrest");

  std::vector<std::string> refused;
  shim::UniqueFd accepted;
  auto started = std::chrono::steady_clock::now();
  shim::Status s = shim::accept_with_token(listener.get(), token, 5s, &accepted,
                                           [&](const std::string& why) { refused.push_back(why); });
  REQUIRE(s.ok());
  // The silent one did not hold the right one up.
  CHECK(std::chrono::steady_clock::now() - started < 3s);
  CHECK(read_some(accepted.get()) == "rest");  // only the line was taken
  CHECK(refused == std::vector<std::string>{"its first line is not the token"});
  CHECK(read_some(wrong.get()).empty());  // closed
}

TEST_CASE("accept_with_token: a silent or closing stranger is dropped", "[vsock]") {
  shim::test::TempDir dir;
  std::string path = dir.sub("agent.sock");
  shim::UniqueFd listener = listen_unix(path);
  shim::UniqueFd silent = connect_unix(path);
  { shim::UniqueFd gone = connect_unix(path); }
  std::thread late([&] {
    std::this_thread::sleep_for(400ms);
    shim::UniqueFd right = connect_unix(path);
    send_text(right.get(), "t0ken\n");
    std::this_thread::sleep_for(200ms);
  });
  std::vector<std::string> refused;
  shim::UniqueFd accepted;
  shim::Status s = shim::accept_with_token(listener.get(), "t0ken", 200ms, &accepted,
                                           [&](const std::string& why) { refused.push_back(why); });
  late.join();
  REQUIRE(s.ok());
  std::sort(refused.begin(), refused.end());
  CHECK(refused ==
        std::vector<std::string>{"closed before its first line", "no first line within 200 ms"});
  CHECK(read_some(silent.get()).empty());
}

TEST_CASE("reserve_vsock_cid without /dev/vhost-vsock says so", "[vsock]") {
  if (::access("/dev/vhost-vsock", F_OK) == 0) LIBSHIM_SKIP("this host has /dev/vhost-vsock");
  shim::UniqueFd vhost;
  std::uint32_t cid = 0;
  shim::Status s = shim::reserve_vsock_cid(3, &vhost, &cid);
  CHECK(s.code() == shim::Code::kFailedPrecondition);
  CHECK(s.message().find("/dev/vhost-vsock") != std::string::npos);
  std::string why;
  CHECK_FALSE(shim::vhost_vsock_usable(&why));
  CHECK(why.find("open /dev/vhost-vsock: ") == 0);
}

TEST_CASE("accept_with_token: a crowd of strangers does not push the host out", "[vsock]") {
  shim::test::TempDir dir;
  std::string path = dir.sub("agent.sock");
  shim::UniqueFd listener = listen_unix(path, 64);
  // In the backlog before accept_with_token runs: strangers that sent part of a line,
  // the host's connection (its line comes later), and a crowd of silent ones.
  std::vector<shim::UniqueFd> crowd;
  for (int i = 0; i < 15; ++i) {
    crowd.push_back(connect_unix(path));
    send_text(crowd.back().get(), "x");
  }
  shim::UniqueFd right = connect_unix(path);
  for (int i = 0; i < 10; ++i) crowd.push_back(connect_unix(path));
  std::thread late([&] {
    std::this_thread::sleep_for(300ms);
    send_text(right.get(), "t0ken\n");
  });
  int dropped = 0;
  shim::UniqueFd accepted;
  shim::Status s =
      shim::accept_with_token(listener.get(), "t0ken", 10s, &accepted, [&](const std::string& why) {
        CHECK(why == "too many connections waiting");
        ++dropped;
      });
  late.join();
  REQUIRE(s.ok());
  CHECK(dropped == 10);  // 26 in 16 places: the partial lines went, the host stayed
  send_text(right.get(), "after");
  CHECK(read_some(accepted.get()) == "after");

  shim::UniqueFd unused;
  CHECK(shim::accept_with_token(listener.get(), "", 1s, &unused).code() ==
        shim::Code::kInvalidArgument);
  CHECK(shim::accept_with_token(listener.get(), "a\nb", 1s, &unused).code() ==
        shim::Code::kInvalidArgument);
}
