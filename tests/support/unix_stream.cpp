#include "support/unix_stream.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace shim::test {

namespace {

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) throw std::runtime_error("socket path too long: " + path);
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

}  // namespace

UnixStream::UnixStream(const std::string& path) {
  sockaddr_un address = unix_address(path);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    int error = errno;
    ::close(fd_);
    throw std::runtime_error("connect " + path + ": " + std::strerror(error));
  }
}

UnixStream::~UnixStream() { close(); }

void UnixStream::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void UnixStream::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

bool UnixStream::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

bool UnixStream::wait_readable(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    pollfd entry{fd_, POLLIN, 0};
    int ready = ::poll(&entry, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

std::optional<std::string> UnixStream::read_exact(std::size_t size,
                                                  std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out(size, '\0');
  std::size_t have = 0;
  while (have < size) {
    if (!wait_readable(deadline)) return std::nullopt;
    ssize_t got = ::recv(fd_, out.data() + have, size - have, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;
    have += static_cast<std::size_t>(got);
  }
  return out;
}

bool UnixStream::wait_closed(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char scratch[4096];
  for (;;) {
    if (!wait_readable(deadline)) return false;
    ssize_t got = ::recv(fd_, scratch, sizeof(scratch), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return true;
  }
}

UnixStreamListener::UnixStreamListener(const std::string& path) {
  sockaddr_un address = unix_address(path);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd_, 16) != 0) {
    int error = errno;
    ::close(fd_);
    throw std::runtime_error("listen " + path + ": " + std::strerror(error));
  }
}

UnixStreamListener::~UnixStreamListener() { ::close(fd_); }

std::unique_ptr<UnixStream> UnixStreamListener::accept(std::chrono::milliseconds timeout) {
  pollfd entry{fd_, POLLIN, 0};
  if (::poll(&entry, 1, static_cast<int>(timeout.count())) <= 0) return nullptr;
  int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return nullptr;
  return std::make_unique<UnixStream>(fd);
}

}  // namespace shim::test
