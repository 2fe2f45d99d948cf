#include "shim/stdio/console_socket.h"

#include "shim/fs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace shim {
namespace {

using Clock = std::chrono::steady_clock;

// Room for a few fds: a sender passing more than one is detected (and all are closed)
// instead of having the extras silently truncated away.
constexpr std::size_t kMaxFds = 8;
// runc sends the pty name as the payload; Go reads up to 4 KiB.
constexpr std::size_t kMaxPayload = 4096;

Status errno_error(const std::string& what) { return shim::errno_error(what, errno); }

class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Waits until `fd` is readable or the deadline passes. false on timeout; errors in *status.
bool wait_readable(int fd, Clock::time_point deadline, Status* status) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      *status = errno_error("poll");
      return false;
    }
    if (ready > 0) return true;
  }
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
}

// Every fd of every SCM_RIGHTS message in `msg`.
std::vector<int> received_fds(msghdr* msg) {
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(c);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      fds.push_back(fd);
    }
  }
  return fds;
}

}  // namespace

Status ConsoleSocket::create(std::unique_ptr<ConsoleSocket>* socket, const std::string& base_dir) {
  std::string base = base_dir.empty() ? runtime_temp_dir() : base_dir;
  std::string pattern = base + "/ptyXXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return errno_error(fmt::format("create console socket dir in {}", base));
  }
  std::string dir = pattern;  // mkdtemp makes it 0700
  std::string path = dir + "/pty.sock";
  auto fail = [&](Status status) {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
    return status;
  };
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return fail(unknown(fmt::format("console socket path {} is too long", path)));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ScopedFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (listener.get() < 0) return fail(errno_error("console socket"));
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0) {
    return fail(errno_error(fmt::format("bind console socket {}", path)));
  }
  if (::listen(listener.get(), 4) < 0) {
    return fail(errno_error(fmt::format("listen on console socket {}", path)));
  }
  socket->reset(new ConsoleSocket(std::move(dir), std::move(path), listener.release()));
  return {};
}

ConsoleSocket::~ConsoleSocket() {
  if (listener_ >= 0) ::close(listener_);
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

Status ConsoleSocket::receive_fd(std::chrono::milliseconds timeout, int* fd, std::string* name) {
  *fd = -1;
  auto deadline = Clock::now() + timeout;
  auto timed_out = [&](const char* what) {
    return Status(Code::kDeadlineExceeded,
                  fmt::format("console socket {}: {} within {} ms", path_, what, timeout.count()));
  };
  Status status;
  int accepted = -1;
  while (accepted < 0) {
    if (!wait_readable(listener_, deadline, &status)) {
      return status.ok() ? timed_out("no connection") : status;
    }
    accepted = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (accepted < 0 && errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
      return errno_error(fmt::format("accept on console socket {}", path_));
    }
  }
  ScopedFd conn(accepted);
  std::array<char, kMaxPayload> payload;
  alignas(cmsghdr) std::array<unsigned char, CMSG_SPACE(kMaxFds * sizeof(int))> control;
  for (;;) {
    if (!wait_readable(conn.get(), deadline, &status)) {
      return status.ok() ? timed_out("no file descriptor received") : status;
    }
    iovec iov{payload.data(), payload.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    ssize_t n = ::recvmsg(conn.get(), &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return errno_error(fmt::format("recvmsg on console socket {}", path_));
    std::vector<int> fds = received_fds(&msg);
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
      close_all(fds);
      return unknown(fmt::format("console socket {}: control message truncated", path_));
    }
    if (fds.empty()) {
      if (n == 0) {
        return unknown(fmt::format(
            "console socket {}: connection closed before a file descriptor was sent", path_));
      }
      return unknown(fmt::format(
          "console socket {}: message of {} bytes carried no file descriptor", path_, n));
    }
    if (fds.size() != 1) {
      close_all(fds);
      return unknown(fmt::format("console socket {}: got {} file descriptors, want 1", path_,
                                 fds.size()));
    }
    *fd = fds.front();
    if (name != nullptr) name->assign(payload.data(), static_cast<std::size_t>(n));
    return {};
  }
}

}  // namespace shim
