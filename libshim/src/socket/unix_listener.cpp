#include "socket/unix_listener.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim {
namespace {

Status fill_address(const std::string& path, sockaddr_un* addr, socklen_t* len) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof addr->sun_path) {
    return invalid_argument(fmt::format("socket path {} is {} bytes, longer than the {}-byte limit",
                                        path, path.size(), sizeof addr->sun_path - 1));
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return {};
}

// A non-blocking connect to `addr`: the connected fd, or -1 and *error its errno.
int connect_nonblocking(const sockaddr_un& addr, socklen_t len, int* error) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) {
    *error = 0;
    return fd;
  }
  *error = errno;
  if (fd >= 0) ::close(fd);
  return -1;
}

// True when something accepts connections at `path` right now (see dial_unix).
// *error: connect's errno when it is not.
bool server_answers(const sockaddr_un& addr, socklen_t len, int* error) {
  int fd = connect_nonblocking(addr, len, error);
  if (fd >= 0) ::close(fd);
  return fd >= 0 || *error == EAGAIN;
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

Status errno_status(std::string_view op, const std::string& path) {
  return errno_error(fmt::format("{} {}", op, path), errno);
}

// A socket bound but not listening yet refuses connections as a dead one does: a start
// that probed in that window removed a shim's fresh socket and bound its own (two shims
// of one group, one of them unreachable: seen in CI). So making a socket (bind to
// listen) and judging one dead (probe to unlink) hold an exclusive flock on the socket's
// directory, for a few system calls. Best effort: a directory that cannot be locked
// leaves the old race, no failure.
class SocketDirLock {
 public:
  explicit SocketDirLock(const std::string& path) {
    auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) return;
    int rc;
    do {
      rc = ::flock(fd_, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
  }
  ~SocketDirLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  SocketDirLock(const SocketDirLock&) = delete;
  SocketDirLock& operator=(const SocketDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

Status listen_unix(const std::string& path, ListenResult* result) {
  sockaddr_un addr;
  socklen_t len = 0;
  if (Status s = fill_address(path, &addr, &len); !s.ok()) return s;
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    if (Status s = make_dirs(path.substr(0, slash), 0700); !s.ok()) return s;
  }
  SocketDirLock lock(path);
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno_status("socket for", path);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) {
      if (::chmod(path.c_str(), 0600) != 0 || ::listen(fd, SOMAXCONN) != 0) {
        Status s = errno_status("listen on", path);
        ::close(fd);
        return s;
      }
      *result = {ListenOutcome::kBound, fd};
      return {};
    }
    int err = errno;
    ::close(fd);
    if (err != EADDRINUSE) {
      errno = err;
      return errno_status("bind", path);
    }
    struct stat probed {};
    if (::lstat(path.c_str(), &probed) != 0) continue;  // just removed: bind again
    int refused = 0;
    if (server_answers(addr, len, &refused)) {
      *result = {ListenOutcome::kInUse, -1};
      return {};
    }
    // A stale socket of a dead shim, but only the file probed: another start may have
    // bound a new one at the path meanwhile (or its shim removed it: ENOENT).
    struct stat now {};
    if (refused == ECONNREFUSED && ::lstat(path.c_str(), &now) == 0 && same_file(probed, now)) {
      ::unlink(path.c_str());
    }
  }
  return Status(Code::kUnknown, fmt::format("bind {}: address still in use", path));
}

Status remove_dead_socket(const std::string& path, bool* removed) {
  *removed = false;
  sockaddr_un addr;
  socklen_t len = 0;
  if (Status s = fill_address(path, &addr, &len); !s.ok()) return s;
  struct stat before {};
  if (::lstat(path.c_str(), &before) != 0) {
    return errno == ENOENT ? Status() : errno_status("stat", path);
  }
  if (!S_ISSOCK(before.st_mode)) return invalid_argument(fmt::format("{} is not a socket", path));
  SocketDirLock lock(path);  // no start is between bind and listen meanwhile
  // Non-blocking (dial_unix): the `delete` action must not hang on a wedged shim, which
  // containerd kills after 5 s.
  int err = 0;
  if (server_answers(addr, len, &err)) return {};  // a live server: not ours to remove
  if (err != ECONNREFUSED) {
    errno = err;
    return errno_status("probe", path);
  }
  // Same file as probed: a new shim of the group may have bound a fresh socket since.
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0 || !same_file(before, now)) return {};
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_status("remove", path);
  *removed = true;
  return {};
}

Status socket_path_of(int fd, std::string* path) {
  sockaddr_un addr;
  socklen_t len = sizeof addr;
  std::memset(&addr, 0, sizeof addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status(Code::kUnknown, fmt::format("getsockname fd {}: {}", fd, std::strerror(errno)));
  }
  if (addr.sun_family != AF_UNIX) {
    return invalid_argument(fmt::format("fd {} is not a unix socket", fd));
  }
  *path = addr.sun_path;  // NUL-terminated for path sockets
  return {};
}

Status dial_unix(const std::string& path, int* fd, int* error) {
  sockaddr_un addr;
  socklen_t len = 0;
  if (Status s = fill_address(path, &addr, &len); !s.ok()) return s;
  *fd = connect_nonblocking(addr, len, error);
  return {};
}

}  // namespace shim
