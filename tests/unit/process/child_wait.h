// What the spawner tests do with the children they start themselves: wait for one by pid
// (EINTR retried) and read a pipe to its end.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace shim_test {

// waitpid(pid) until it is not interrupted; the wait status (0 if it failed otherwise).
inline int wait_for_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Everything readable from `fd` until EOF or an error.
inline std::string read_to_end(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(n));
  return out;
}

}  // namespace shim_test
