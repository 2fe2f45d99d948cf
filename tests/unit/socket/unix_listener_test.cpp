// The shim socket's listener (socket/unix_listener.h): a live server, however busy, is
// kInUse and never blocks the probe; a dead one's socket is replaced.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "socket/unix_listener.h"
#include "support/temp_dir.h"

namespace {

int dial_nonblocking(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TEST_CASE("unix listener: a server that accepts nothing is in use, and the probe returns",
          "[unix-listener]") {
  shim::test::TempDir dir("listen-");
  std::string path = dir.sub("shim.sock");
  shim::ListenResult first;
  REQUIRE(shim::listen_unix(path, &first).ok());
  REQUIRE(first.outcome == shim::ListenOutcome::kBound);
  REQUIRE(::listen(first.fd, 0) == 0);  // a backlog of one, and nobody accepts
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int fd = dial_nonblocking(path);
    if (fd >= 0) fillers.push_back(fd);
  }
  CHECK(fillers.size() < 4);  // the backlog is full

  shim::ListenResult second;
  REQUIRE(shim::listen_unix(path, &second).ok());  // a blocking connect would wait for good
  CHECK(second.outcome == shim::ListenOutcome::kInUse);

  for (int fd : fillers) ::close(fd);
  ::close(first.fd);
  shim::ListenResult third;  // the server is gone: its socket is replaced
  REQUIRE(shim::listen_unix(path, &third).ok());
  CHECK(third.outcome == shim::ListenOutcome::kBound);
  ::close(third.fd);
}
