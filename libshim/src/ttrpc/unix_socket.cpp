#include "ttrpc/unix_socket.h"

#include "shim/fs.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

namespace shim::ttrpc {

namespace {

// A socket that cannot be made is the peer being unavailable, unless we may not.
Status errno_status(std::string_view what, std::string_view path) {
  int error = errno;
  return errno_error(fmt::format("{} {}", what, path), error, ErrorStyle::kC,
                     error == EACCES || error == EPERM ? Code::kPermissionDenied : Code::kUnavailable);
}

}  // namespace

int open_unix_socket(Status* status) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) *status = errno_status("socket", "AF_UNIX");
  return fd;
}

int listen_unix_path(const std::string& path, Status* status) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    *status = Status(Code::kInvalidArgument,
                     fmt::format("socket path \"{}\" is empty or longer than {} bytes", path,
                                 sizeof(address.sun_path) - 1));
    return -1;
  }
  std::memcpy(address.sun_path, path.data(), path.size());

  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) {
      *status = Status(Code::kAlreadyExists, fmt::format("{} exists and is not a socket", path));
      return -1;
    }
    if (::unlink(path.c_str()) != 0) {
      *status = errno_status("remove stale socket", path);
      return -1;
    }
  }

  int fd = open_unix_socket(status);
  if (fd < 0) return -1;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    *status = errno_status("bind", path);
    ::close(fd);
    return -1;
  }
  if (::chmod(path.c_str(), 0600) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    *status = errno_status("listen on", path);
    ::close(fd);
    ::unlink(path.c_str());
    return -1;
  }
  return fd;
}

int accept_unix(int listen_fd) {
  return ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

bool peer_is_same_user(int fd) {
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return false;
  return credentials.uid == ::geteuid() && credentials.gid == ::getegid();
}

Status prepare_listen_fd(int fd) {
  int listening = 0;
  socklen_t size = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening == 0) {
    return Status(Code::kInvalidArgument, fmt::format("fd {} is not a listening socket", fd));
  }
  int fd_flags = ::fcntl(fd, F_GETFD);
  int status_flags = ::fcntl(fd, F_GETFL);
  if (fd_flags < 0 || status_flags < 0 || ::fcntl(fd, F_SETFD, fd_flags | FD_CLOEXEC) != 0 ||
      ::fcntl(fd, F_SETFL, status_flags | O_NONBLOCK) != 0) {
    return errno_status("prepare listening fd", std::to_string(fd));
  }
  return Status();
}

}  // namespace shim::ttrpc
