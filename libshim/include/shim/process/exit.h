// ProcessExit: one reaped child, as the reaper reports it.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace shim {

// A reaped child: pid, exit status as containerd reports it, and when.
struct ProcessExit {
  pid_t pid = 0;  // the reaped child
  // What containerd reports: the exit code, or 128 + signal number when a signal killed
  // the process (the shell's convention, used by the Go reaper too).
  int status = 0;
  // When the reaper collected it (the wall clock containerd shows as exited_at).
  std::chrono::system_clock::time_point exited_at;
  // The raw waitpid() status, for callers that need WCOREDUMP and the like.
  int wait_status = 0;

  friend bool operator==(const ProcessExit&, const ProcessExit&) = default;
};

// WEXITSTATUS for a normal exit, 128 + WTERMSIG for a killed process, 255 for anything
// else (a stop or continue status is never a valid exit).
int exit_status_from_wait(int wait_status);

// A ProcessExit from waitpid()'s `wait_status` (status by exit_status_from_wait).
ProcessExit make_process_exit(pid_t pid, int wait_status,
                              std::chrono::system_clock::time_point exited_at);

}  // namespace shim
