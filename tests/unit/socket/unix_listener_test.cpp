// The shim socket's listener (socket/unix_listener.h): a live server, however busy, is
// kInUse and never blocks the probe; a dead one's socket is replaced.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
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

// A socket bound but not listening yet refuses connections as a dead one does. The
// start that made it holds the directory's lock from bind to listen, so a racing
// listen_unix (or remove_dead_socket) waits, then finds it live.
TEST_CASE("unix listener: a socket between its bind and listen is not taken for dead",
          "[unix-listener]") {
  shim::test::TempDir dir("listen-");
  std::string path = dir.sub("shim.sock");
  int dir_fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dir_fd >= 0);
  REQUIRE(::flock(dir_fd, LOCK_EX) == 0);  // as a start between bind and listen
  int fresh = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  REQUIRE(::bind(fresh, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);

  std::atomic<bool> done{false};
  shim::ListenResult racing;
  bool removed = true;
  shim::Status listened, probed;  // checked here: Catch's assertions are not thread-safe
  std::thread other([&] {
    listened = shim::listen_unix(path, &racing);
    probed = shim::remove_dead_socket(path, &removed);
    done = true;
  });
  ::usleep(100'000);
  CHECK_FALSE(done);  // it waits for the lock
  // CHECK, not REQUIRE, while the thread runs: a throw here would end the process.
  CHECK(::listen(fresh, SOMAXCONN) == 0);
  CHECK(::flock(dir_fd, LOCK_UN) == 0);
  other.join();
  CHECK(listened.ok());
  CHECK(probed.ok());
  CHECK(racing.outcome == shim::ListenOutcome::kInUse);
  CHECK_FALSE(removed);
  struct stat st {};
  CHECK(::stat(path.c_str(), &st) == 0);  // the fresh socket is still there
  ::close(fresh);
  ::close(dir_fd);
}
