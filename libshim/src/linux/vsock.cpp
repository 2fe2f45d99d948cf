#include "shim/linux/vsock.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace shim {
namespace {

constexpr const char* kVhostVsock = "/dev/vhost-vsock";
// <linux/vhost.h>'s VHOST_VSOCK_SET_GUEST_CID: that header is C only (its virtio_ring.h
// does not compile as C++).
constexpr unsigned long kSetGuestCid = _IOW(0xAF, 0x60, std::uint64_t);

// A peer that is not there (yet): worth another try.
bool not_listening(int error) {
  return error == ECONNREFUSED || error == ECONNRESET || error == ENOENT || error == ENODEV ||
         error == EHOSTUNREACH || error == ENETUNREACH || error == EPIPE;
}

Status dial_error(const VsockTarget& target, std::string_view step, int error) {
  Code code = not_listening(error) ? Code::kUnavailable
              : error == ETIMEDOUT ? Code::kDeadlineExceeded
                                   : Code::kInternal;
  return Status(code, fmt::format("{}: {}: {}", target.describe(), step, std::strerror(error)));
}

timeval as_timeval(std::chrono::milliseconds timeout) {
  timeval limit{};
  limit.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  limit.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
  return limit;
}

Status dial_kernel(const VsockTarget& target, std::chrono::milliseconds timeout, UniqueFd* out) {
  UniqueFd fd(::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return dial_error(target, "socket", errno);
  timeval limit = as_timeval(timeout);
  // Not fatal: the kernel's own limit (2 s) applies instead.
  (void)::setsockopt(fd.get(), AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &limit, sizeof limit);
  sockaddr_vm address{};
  address.svm_family = AF_VSOCK;
  address.svm_cid = target.cid;
  address.svm_port = target.port;
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno != EINTR) return dial_error(target, "connect", errno);
  }
  *out = std::move(fd);
  return {};
}

// Reads the answer line byte by byte: what follows it is the guest's.
Status read_answer(int fd, const VsockTarget& target,
                   std::chrono::steady_clock::time_point deadline, std::string* line) {
  while (line->empty() || line->back() != '\n') {
    if (line->size() > 64) {
      return Status(
          Code::kInvalidArgument,
          fmt::format("{}: the answer to CONNECT is too long: {:?}", target.describe(), *line));
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return dial_error(target, "wait for the answer to CONNECT", ETIMEDOUT);
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) return dial_error(target, "poll", errno);
    if (n <= 0) continue;
    char c = 0;
    ssize_t got = ::read(fd, &c, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return dial_error(target, "read the answer to CONNECT", errno);
    // The VMM closes the connection when the guest refused it (nobody listens there).
    if (got == 0) return dial_error(target, "the connection closed before OK", ECONNRESET);
    line->push_back(c);
  }
  return {};
}

Status dial_hybrid(const VsockTarget& target, std::chrono::milliseconds timeout, UniqueFd* out) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return dial_error(target, "socket", errno);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (target.uds_path.size() >= sizeof address.sun_path) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: the socket path is too long", target.describe()));
  }
  std::memcpy(address.sun_path, target.uds_path.c_str(), target.uds_path.size() + 1);
  // One deadline for the connect and the answer. connect() on a unix socket whose
  // backlog is full waits this long at most.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  timeval limit = as_timeval(timeout);
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit) != 0)
    return dial_error(target, "SO_SNDTIMEO", errno);
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno == EAGAIN) return dial_error(target, "connect (backlog full)", ETIMEDOUT);
    if (errno != EINTR) return dial_error(target, "connect", errno);
  }
  std::string request = fmt::format("CONNECT {}\n", target.port);
  // A few bytes into a fresh unix socket's empty buffer: one write.
  ssize_t sent = ::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL);
  if (sent < 0) return dial_error(target, "send CONNECT", errno);
  if (sent != static_cast<ssize_t>(request.size()))
    return dial_error(target, "send CONNECT (short write)", EIO);
  std::string line;
  if (Status s = read_answer(fd.get(), target, deadline, &line); !s.ok()) return s;
  std::string_view answer(line);
  answer.remove_suffix(1);
  std::uint32_t host_port = 0;
  auto [end, error] =
      answer.starts_with("OK ")
          ? std::from_chars(answer.data() + 3, answer.data() + answer.size(), host_port)
          : std::from_chars_result{answer.data(), std::errc::invalid_argument};
  if (error != std::errc() || end != answer.data() + answer.size()) {
    return Status(Code::kInvalidArgument, fmt::format("{}: the answer to CONNECT is {:?}, not OK",
                                                      target.describe(), line));
  }
  *out = std::move(fd);
  return {};
}

}  // namespace

std::string VsockTarget::describe() const {
  return uds_path.empty() ? fmt::format("vsock {}:{}", cid, port)
                          : fmt::format("hybrid vsock {}:{}", uds_path, port);
}

Status dial_vsock(const VsockTarget& target, std::chrono::milliseconds timeout, UniqueFd* out) {
  return target.uds_path.empty() ? dial_kernel(target, timeout, out)
                                 : dial_hybrid(target, timeout, out);
}

bool vhost_vsock_usable(std::string* why_not) {
  UniqueFd fd(::open(kVhostVsock, O_RDWR | O_CLOEXEC));
  if (fd.valid()) return true;
  *why_not = fmt::format("open {}: {}", kVhostVsock, std::strerror(errno));
  return false;
}

Status reserve_vsock_cid(std::uint32_t first, UniqueFd* vhost, std::uint32_t* cid) {
  UniqueFd fd(::open(kVhostVsock, O_RDWR | O_CLOEXEC));
  if (!fd.valid()) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("open {}: {}", kVhostVsock, std::strerror(errno)));
  }
  constexpr std::uint32_t kFirstGuestCid = 3;
  constexpr int kTries = 4096;
  std::uint32_t candidate = first < kFirstGuestCid ? kFirstGuestCid : first;
  for (int i = 0; i < kTries; ++i) {
    std::uint64_t value = candidate;
    if (::ioctl(fd.get(), kSetGuestCid, &value) == 0) {
      *vhost = std::move(fd);
      *cid = candidate;
      return {};
    }
    if (errno != EADDRINUSE) {
      return Status(Code::kInternal, fmt::format("{}: set guest CID {}: {}", kVhostVsock, candidate,
                                                 std::strerror(errno)));
    }
    // U32_MAX is VMADDR_CID_ANY; wrap below it.
    candidate = candidate >= 0xfffffffeu ? kFirstGuestCid : candidate + 1;
  }
  return Status(Code::kResourceExhausted,
                fmt::format("{}: {} CIDs from {} are all in use", kVhostVsock, kTries, first));
}

Status listen_vsock(std::uint32_t port, UniqueFd* out) {
  UniqueFd fd(::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid())
    return Status(Code::kUnavailable, fmt::format("vsock socket: {}", std::strerror(errno)));
  sockaddr_vm address{};
  address.svm_family = AF_VSOCK;
  address.svm_cid = VMADDR_CID_ANY;
  address.svm_port = port;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    return Status(Code::kUnavailable,
                  fmt::format("bind vsock port {}: {}", port, std::strerror(errno)));
  // Room for the host's connection among strangers' (accept_with_token drains them).
  if (::listen(fd.get(), 128) != 0)
    return Status(Code::kInternal,
                  fmt::format("listen on vsock port {}: {}", port, std::strerror(errno)));
  *out = std::move(fd);
  return {};
}

namespace {

constexpr std::size_t kMaxWaiting = 16;
constexpr std::size_t kMaxToken = 200;

// A connection accept_with_token() reads the first line of.
struct Candidate {
  UniqueFd fd;
  std::string line;
  std::chrono::steady_clock::time_point deadline;
};

// Reads what `c` sent; true once it sent its line of at most `max` bytes with the
// newline (or failed: then `why` says so).
bool read_candidate(Candidate& c, std::size_t max, std::string* why) {
  char buffer[256];
  ssize_t n = ::recv(c.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT | MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n <= 0) {
    *why = n == 0 ? "closed before its first line" : std::strerror(errno);
    return true;
  }
  // Take up to the newline only: what follows is the protocol's.
  std::string_view peeked(buffer, static_cast<std::size_t>(n));
  std::size_t newline = peeked.find('\n');
  std::size_t take = newline == std::string_view::npos ? peeked.size() : newline + 1;
  if (::recv(c.fd.get(), buffer, take, MSG_DONTWAIT) != static_cast<ssize_t>(take)) {
    *why = fmt::format("read: {}", std::strerror(errno));
    return true;
  }
  c.line.append(buffer, take);
  if (c.line.size() > max) {
    *why = "its first line is too long";
    return true;
  }
  return newline != std::string_view::npos;
}

// Compares all of both, so the time taken says nothing of where they differ.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  return differ == 0;
}

// The connections accept_with_token() waits for a first line from.
class TokenGate {
 public:
  TokenGate(std::string want, std::chrono::milliseconds line_timeout,
            const std::function<void(const std::string&)>& on_refused)
      : want_(std::move(want)), line_timeout_(line_timeout), on_refused_(on_refused) {}

  std::size_t size() const { return waiting_.size(); }
  int fd(std::size_t i) const { return waiting_[i].fd.get(); }
  // How long poll() may wait: until the next deadline (-1: none).
  int wait_ms(std::chrono::steady_clock::time_point now) const {
    int wait = -1;
    for (const Candidate& c : waiting_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now);
      int ms = static_cast<int>(std::max<long>(left.count(), 0) + 1);
      wait = wait < 0 ? ms : std::min(wait, ms);
    }
    return wait;
  }
  // Reads candidate `i`; true when it is the host's (moved to *out). Closes a stranger
  // that is done (a wrong line, an error) or out of time. Erases only `i`.
  bool settle(std::size_t i, bool readable, std::chrono::steady_clock::time_point now,
              UniqueFd* out) {
    Candidate& c = waiting_[i];
    std::string why;
    if (readable && read_candidate(c, want_.size(), &why)) {
      if (why.empty() && same_secret(c.line, want_)) {
        *out = std::move(c.fd);
        return true;
      }
      if (why.empty()) why = "its first line is not the token";
    } else if (now >= c.deadline) {
      why = fmt::format("no first line within {} ms", line_timeout_.count());
    }
    if (!why.empty()) drop(i, why);
    return false;
  }
  // Settles every candidate (walked back: erasing keeps the indexes still to visit).
  bool settle_all(const std::vector<pollfd>* polled, std::chrono::steady_clock::time_point now,
                  UniqueFd* out) {
    for (std::size_t i = waiting_.size(); i-- > 0;) {
      if (settle(i, polled == nullptr || (*polled)[i + 1].revents != 0, now, out)) return true;
    }
    return false;
  }
  // Takes `fd`, making room first: the host writes its line in one go, so a part of a
  // line marks a stranger; else the oldest goes. True when it is the host's.
  bool admit(UniqueFd fd, std::chrono::steady_clock::time_point now, UniqueFd* out) {
    if (waiting_.size() == kMaxWaiting && settle_all(nullptr, now, out)) return true;
    if (waiting_.size() == kMaxWaiting) {
      auto partial = std::find_if(waiting_.begin(), waiting_.end(),
                                  [](const Candidate& c) { return !c.line.empty(); });
      drop(partial == waiting_.end() ? 0 : static_cast<std::size_t>(partial - waiting_.begin()),
           "too many connections waiting");
    }
    waiting_.push_back({std::move(fd), {}, now + line_timeout_});
    return settle(waiting_.size() - 1, true, now, out);
  }

 private:
  void drop(std::size_t i, const std::string& why) {
    if (on_refused_) on_refused_(why);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  std::string want_;
  std::chrono::milliseconds line_timeout_;
  const std::function<void(const std::string&)>& on_refused_;
  std::vector<Candidate> waiting_;
};

}  // namespace

Status accept_with_token(int listener, const std::string& token,
                         std::chrono::milliseconds line_timeout, UniqueFd* out,
                         const std::function<void(const std::string&)>& on_refused) {
  if (token.empty() || token.size() > kMaxToken || token.find('\n') != std::string::npos)
    return Status(Code::kInvalidArgument, "the token must be 1-200 bytes without a newline");
  // Accepted until the backlog is empty, so strangers cannot fill it.
  int flags = ::fcntl(listener, F_GETFL);
  if (flags < 0 || ::fcntl(listener, F_SETFL, flags | O_NONBLOCK) != 0)
    return Status(Code::kInternal, fmt::format("listener O_NONBLOCK: {}", std::strerror(errno)));
  TokenGate gate(token + "\n", line_timeout, on_refused);
  for (;;) {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (std::size_t i = 0; i < gate.size(); ++i) fds.push_back({gate.fd(i), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), gate.wait_ms(std::chrono::steady_clock::now())) < 0 &&
        errno != EINTR)
      return Status(Code::kInternal, fmt::format("poll for the host: {}", std::strerror(errno)));
    auto now = std::chrono::steady_clock::now();
    if (gate.settle_all(&fds, now, out)) return {};
    if ((fds[0].revents & POLLIN) == 0) continue;
    // At most a round's worth, so that those waiting are read between rounds.
    for (std::size_t accepted = 0; accepted < kMaxWaiting; ++accepted) {
      UniqueFd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return Status(Code::kInternal, fmt::format("accept: {}", std::strerror(errno)));
      }
      if (gate.admit(std::move(fd), now, out)) return {};
    }
  }
}

}  // namespace shim
