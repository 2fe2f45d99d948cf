#include "stdio/stdio_fd.h"

#include "shim/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace shim::stdio {

shim::Status errno_status(const std::string& what) { return shim::errno_error(what, errno); }

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

shim::Status open_stdin_fifo(const std::string& path, Fd* reader, Fd* keeper) {
  bool fifo = false;
  if (shim::Status status = is_fifo(path, &fifo); !status.ok()) {
    return shim::unknown(fmt::format("failed to open stdin fifo {}: {}", path, status.message()));
  }
  if (!fifo) return shim::unknown(fmt::format("failed to open stdin fifo {}: not a fifo", path));
  Fd read_end(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!read_end.valid()) return errno_status(fmt::format("open stdin fifo {}", path));
  Fd write_end(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!write_end.valid()) return errno_status(fmt::format("failed to open stdin fifo {}", path));
  *reader = std::move(read_end);
  *keeper = std::move(write_end);
  return {};
}

}  // namespace shim::stdio
