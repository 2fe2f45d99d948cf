#include "shim-runc/stdio_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace runc_shim::stdio {

shim::Status errno_status(const std::string& what) {
  return shim::unknown(fmt::format("{}: {}", what, std::strerror(errno)));
}

shim::Status make_pipe(Pipe* pipe) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return errno_status("pipe");
  pipe->read_end = Fd(fds[0]);
  pipe->write_end = Fd(fds[1]);
  return {};
}

shim::Status set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return errno_status(fmt::format("set O_NONBLOCK on fd {}", fd));
  }
  return {};
}

shim::Status is_fifo(const std::string& path, bool* fifo) {
  struct stat st{};
  if (::stat(path.c_str(), &st) < 0) return errno_status(fmt::format("stat {}", path));
  *fifo = S_ISFIFO(st.st_mode);
  return {};
}

}  // namespace runc_shim::stdio
