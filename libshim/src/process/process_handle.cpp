#include "shim/process/process_handle.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace shim {

namespace {

int sys_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

int sys_pidfd_send_signal(int pidfd, int sig) {
#ifdef SYS_pidfd_send_signal
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
#else
  (void)pidfd;
  (void)sig;
  errno = ENOSYS;
  return -1;
#endif
}

Status already_finished(pid_t pid, int sig) {
  return not_found(fmt::format("signal {} to pid {}: process already finished", sig, pid));
}

}  // namespace

ProcessHandle::~ProcessHandle() { reset(); }

ProcessHandle::ProcessHandle(ProcessHandle&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      reaped_(std::exchange(other.reaped_, false)) {}

ProcessHandle& ProcessHandle::operator=(ProcessHandle&& other) noexcept {
  if (this == &other) return *this;
  reset();
  pid_ = std::exchange(other.pid_, -1);
  pidfd_ = std::exchange(other.pidfd_, -1);
  reaped_ = std::exchange(other.reaped_, false);
  return *this;
}

Status ProcessHandle::open(pid_t pid, ProcessHandle* handle) {
  if (pid <= 0) return invalid_argument(fmt::format("open process handle for pid {}", pid));
  int fd = sys_pidfd_open(pid);  // pidfds are always close-on-exec
  if (fd >= 0) {
    *handle = ProcessHandle(pid, fd);
    return {};
  }
  int err = errno;
  if (err == ESRCH) return not_found(fmt::format("open process handle for pid {}", pid));
  if (err != ENOSYS) {
    return unknown(fmt::format("pidfd_open {}: {}", pid, std::strerror(err)));
  }
  if (::kill(pid, 0) < 0 && errno == ESRCH)
    return not_found(fmt::format("open process handle for pid {}", pid));
  *handle = ProcessHandle(pid, -1);
  return {};
}

bool ProcessHandle::pidfd_supported() {
  int fd = sys_pidfd_open(::getpid());
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

Status ProcessHandle::signal(int sig) const {
  if (!valid()) return invalid_argument(fmt::format("signal {}: no process", sig));
  if (reaped_) return already_finished(pid_, sig);
  int rc = has_pidfd() ? sys_pidfd_send_signal(pidfd_, sig) : ::kill(pid_, sig);
  if (rc == 0) return {};
  int err = errno;
  if (err == ESRCH) return already_finished(pid_, sig);
  return unknown(fmt::format("signal {} to pid {}: {}", sig, pid_, std::strerror(err)));
}

void ProcessHandle::reset() {
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
  pid_ = -1;
  reaped_ = false;
}

}  // namespace shim
