#include "shim/stdio/pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim {
namespace {

constexpr int kFlags = O_RDWR | O_NOCTTY | O_CLOEXEC;

// The slave of `master`: TIOCGPTPEER opens it without a path lookup (Linux 4.13+), so
// it cannot be swapped under us; older kernels open ptsname()'s path.
Status open_slave(int master, const std::string& name, UniqueFd* slave) {
#ifdef TIOCGPTPEER
  int fd = ::ioctl(master, TIOCGPTPEER, kFlags);
  if (fd >= 0) {
    slave->reset(fd);
    return {};
  }
  if (errno != EINVAL && errno != ENOTTY)
    return errno_error(fmt::format("open the slave of {}", name), errno);
#endif
  int fd_by_path = ::open(name.c_str(), kFlags);
  if (fd_by_path < 0) return errno_error(fmt::format("open {}", name), errno);
  slave->reset(fd_by_path);
  return {};
}

}  // namespace

Status Pty::open(Pty* pty) {
  *pty = Pty();
  UniqueFd master(::open("/dev/ptmx", kFlags));
  if (!master.valid()) return errno_error("open /dev/ptmx", errno);
  int unlock = 0;
  if (::ioctl(master.get(), TIOCSPTLCK, &unlock) < 0)
    return errno_error("unlock /dev/ptmx (TIOCSPTLCK)", errno);
  unsigned number = 0;
  if (::ioctl(master.get(), TIOCGPTN, &number) < 0)
    return errno_error("pty number (TIOCGPTN)", errno);
  std::string name = fmt::format("/dev/pts/{}", number);
  UniqueFd slave;
  if (Status s = open_slave(master.get(), name, &slave); !s.ok()) return s;
  pty->master_ = std::move(master);
  pty->slave_ = std::move(slave);
  pty->name_ = std::move(name);
  return {};
}

Status Pty::resize(unsigned rows, unsigned columns) const {
  if (!valid()) return failed_precondition("resize: no pty");
  winsize size{};
  size.ws_row = static_cast<unsigned short>(rows);
  size.ws_col = static_cast<unsigned short>(columns);
  if (::ioctl(master_.get(), TIOCSWINSZ, &size) < 0) {
    return errno_error(fmt::format("resize {} to {}x{}", name_, rows, columns), errno);
  }
  return {};
}

}  // namespace shim
