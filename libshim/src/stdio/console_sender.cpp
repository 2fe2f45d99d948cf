#include "shim/stdio/console_sender.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "shim/fs.h"
#include "shim/unique_fd.h"

namespace shim {

// As runc does it (internal/cmsg/cmsg.go's SendRawFd on the connection runc's
// utils_linux.go dials): one sendmsg, the name as the bytes, the fd as SCM_RIGHTS.
Status send_console(const std::string& socket_path, int fd, std::string_view name) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof address.sun_path) {
    return invalid_argument(fmt::format("console socket path \"{}\"", socket_path));
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  UniqueFd connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!connection.valid()) return errno_error("console socket", errno);
  int connected;
  do {
    connected =
        ::connect(connection.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  } while (connected < 0 && errno == EINTR);
  if (connected < 0)
    return errno_error(fmt::format("connect to console socket {}", socket_path), errno);

  std::string payload(name.empty() ? std::string_view("pty") : name);
  iovec iov{payload.data(), payload.size()};
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* rights = CMSG_FIRSTHDR(&message);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(rights), &fd, sizeof fd);
  ssize_t sent;
  do {
    sent = ::sendmsg(connection.get(), &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return errno_error(fmt::format("send to console socket {}", socket_path), errno);
  // The fd went with the first byte; the rest of the name (a short write) is only a label.
  return {};
}

}  // namespace shim
