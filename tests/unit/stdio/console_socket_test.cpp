// shim::ConsoleSocket: the --console-socket end, fed by a hand-written sender that does
// what runc does (connect, one sendmsg with SCM_RIGHTS, close) before we receive; and
// libshim's own sending end (send_console) with a shim::Pty.
#include "shim/stdio/console_socket.h"

#include "shim/stdio/console_sender.h"
#include "shim/stdio/pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/temp_dir.h"

namespace shim {
namespace {

using namespace std::chrono_literals;

int connect_to(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// Connects, sends `payload` with `fds` attached (none: a plain message), closes.
void send_fds(const std::string& path, const std::string& payload, const std::vector<int>& fds) {
  int conn = connect_to(path);
  iovec iov{const_cast<char*>(payload.data()), payload.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<unsigned char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  REQUIRE(::sendmsg(conn, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(payload.size()));
  ::close(conn);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::unique_ptr<ConsoleSocket> make_socket(const std::string& base) {
  std::unique_ptr<ConsoleSocket> socket;
  Status status = ConsoleSocket::create(&socket, base);
  REQUIRE(status.ok());
  REQUIRE(socket);
  return socket;
}

TEST_CASE("console socket lives in a private pty dir removed on destruction", "[console]") {
  test::TempDir base;
  std::string dir, path;
  {
    auto socket = make_socket(base.path());
    dir = socket->dir();
    path = socket->path();
    CHECK(dir.rfind(base.path() + "/pty", 0) == 0);
    CHECK(path == dir + "/pty.sock");
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
  }
  CHECK_FALSE(exists(path));
  CHECK_FALSE(exists(dir));
}

TEST_CASE("console socket defaults to XDG_RUNTIME_DIR", "[console]") {
  test::TempDir base;
  const char* old = std::getenv("XDG_RUNTIME_DIR");
  std::string saved = old != nullptr ? old : "";
  ::setenv("XDG_RUNTIME_DIR", base.path().c_str(), 1);
  std::unique_ptr<ConsoleSocket> socket;
  Status status = ConsoleSocket::create(&socket);
  if (old != nullptr) {
    ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_RUNTIME_DIR");
  }
  REQUIRE(status.ok());
  CHECK(socket->dir().rfind(base.path() + "/pty", 0) == 0);
}

TEST_CASE("console socket receives a pty master sent before the receive", "[console]") {
  test::TempDir base;
  auto socket = make_socket(base.path());
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  std::string slave_name = ::ptsname(master);
  // As runc: connect and send, then return; the connection waits in the backlog.
  send_fds(socket->path(), slave_name, {master});

  int received = -1;
  std::string name;
  Status status = socket->receive_fd(2s, &received, &name);
  REQUIRE(status.ok());
  REQUIRE(received >= 0);
  CHECK(received != master);
  CHECK(name == slave_name);
  CHECK((::fcntl(received, F_GETFD) & FD_CLOEXEC) != 0);
  // The same pty: the received fd names the slave we know, and bytes written on the
  // slave come out of it.
  char pts[128];
  REQUIRE(::ptsname_r(received, pts, sizeof pts) == 0);
  CHECK(std::string(pts) == slave_name);
  int slave = ::open(slave_name.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(slave >= 0);
  REQUIRE(::write(slave, "x", 1) == 1);
  char byte = 0;
  REQUIRE(::read(received, &byte, 1) == 1);
  CHECK(byte == 'x');
  ::close(slave);
  ::close(received);
  ::close(master);
}

TEST_CASE("console socket times out when nobody connects", "[console]") {
  test::TempDir base;
  auto socket = make_socket(base.path());
  int fd = 7;
  auto start = std::chrono::steady_clock::now();
  Status status = socket->receive_fd(60ms, &fd);
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(status.code() == Code::kDeadlineExceeded);
  CHECK(status.message().find("no connection") != std::string::npos);
  CHECK(status.message().find(socket->path()) != std::string::npos);
  CHECK(fd == -1);
  CHECK(elapsed >= 60ms);
  CHECK(elapsed < 2s);
}

TEST_CASE("console socket times out on a connection that sends nothing", "[console]") {
  test::TempDir base;
  auto socket = make_socket(base.path());
  int conn = connect_to(socket->path());
  int fd = -1;
  Status status = socket->receive_fd(60ms, &fd);
  CHECK(status.code() == Code::kDeadlineExceeded);
  CHECK(status.message().find("no file descriptor received") != std::string::npos);
  ::close(conn);
}

TEST_CASE("console socket rejects a message without an fd", "[console]") {
  test::TempDir base;
  auto socket = make_socket(base.path());
  send_fds(socket->path(), "garbage", {});
  int fd = 7;
  Status status = socket->receive_fd(2s, &fd);
  CHECK(status.code() == Code::kUnknown);
  CHECK(status.message() ==
        "console socket " + socket->path() + ": message of 7 bytes carried no file descriptor");
  CHECK(fd == -1);
}

TEST_CASE("console socket reports a connection closed before sending", "[console]") {
  test::TempDir base;
  auto socket = make_socket(base.path());
  ::close(connect_to(socket->path()));
  int fd = -1;
  Status status = socket->receive_fd(2s, &fd);
  CHECK(status.code() == Code::kUnknown);
  CHECK(status.message().find("connection closed before a file descriptor was sent") !=
        std::string::npos);
}

// Whether every write end of the pipe is gone: a read then sees EOF at once.
bool write_end_closed(int read_end) {
  ::fcntl(read_end, F_SETFL, O_NONBLOCK);
  char byte;
  return ::read(read_end, &byte, 1) == 0;
}

TEST_CASE("console socket closes every fd of a message with two", "[console]") {
  test::TempDir base;
  auto socket = make_socket(base.path());
  int a[2], b[2];
  REQUIRE(::pipe2(a, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(b, O_CLOEXEC) == 0);
  send_fds(socket->path(), "x", {a[1], b[1]});
  ::close(a[1]);
  ::close(b[1]);
  int fd = 7;
  Status status = socket->receive_fd(2s, &fd);
  CHECK(status.code() == Code::kUnknown);
  CHECK(status.message().find("got 2 file descriptors, want 1") != std::string::npos);
  CHECK(fd == -1);
  CHECK(write_end_closed(a[0]));
  CHECK(write_end_closed(b[0]));
  ::close(a[0]);
  ::close(b[0]);
}

TEST_CASE("console socket destroyed with a queued fd releases it", "[console]") {
  test::TempDir base;
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  {
    auto socket = make_socket(base.path());
    send_fds(socket->path(), "x", {p[1]});
    ::close(p[1]);
    CHECK_FALSE(write_end_closed(p[0]));  // still in flight, held by the queued message
  }
  CHECK(write_end_closed(p[0]));
  ::close(p[0]);
}

TEST_CASE("send_console delivers a Pty's master and name as runc does", "[console]") {
  test::TempDir base;
  auto socket = make_socket(base.path());
  Pty pty;
  REQUIRE(Pty::open(&pty).ok());
  REQUIRE(pty.valid());
  CHECK(pty.name() == std::string(::ptsname(pty.master())));
  CHECK((::fcntl(pty.master(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK((::fcntl(pty.slave(), F_GETFD) & FD_CLOEXEC) != 0);
  REQUIRE(send_console(socket->path(), pty.master(), pty.name()).ok());
  int received = -1;
  std::string name;
  REQUIRE(socket->receive_fd(2s, &received, &name).ok());
  CHECK(name == pty.name());
  // The same pty: what its slave writes comes out of the received master.
  REQUIRE(::write(pty.slave(), "y", 1) == 1);
  char byte = 0;
  REQUIRE(::read(received, &byte, 1) == 1);
  CHECK(byte == 'y');
  ::close(received);

  SECTION("an empty name still carries the fd (a stream socket needs a byte)") {
    REQUIRE(send_console(socket->path(), pty.master(), "").ok());
    REQUIRE(socket->receive_fd(2s, &received, &name).ok());
    CHECK(name == "pty");
    ::close(received);
  }
  SECTION("errors name the socket") {
    Status status = send_console(base.path() + "/none.sock", pty.master(), pty.name());
    CHECK(status.message() ==
          "connect to console socket " + base.path() + "/none.sock: No such file or directory");
    status = send_console(std::string(200, 'x'), pty.master(), pty.name());
    CHECK(status.code() == Code::kInvalidArgument);
    CHECK(Pty().resize(1, 1).code() == Code::kFailedPrecondition);
  }
}

TEST_CASE("console socket in a missing base dir is an error naming it", "[console]") {
  std::unique_ptr<ConsoleSocket> socket;
  Status status = ConsoleSocket::create(&socket, "/nonexistent-libshim-dir");
  CHECK_FALSE(status.ok());
  CHECK(status.message().find("/nonexistent-libshim-dir") != std::string::npos);
  CHECK_FALSE(socket);
}

}  // namespace
}  // namespace shim
