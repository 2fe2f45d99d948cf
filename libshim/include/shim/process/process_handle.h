// ProcessHandle: signals one specific process, never whichever process later got its pid.
//
// How pid reuse is ruled out: the shim is a child subreaper, so every process it tracks
// (its children, and orphaned descendants reparented to it) stays a zombie, holding its
// pid, until the shim's reaper collects it. A pidfd opened while the process is still
// ours (not yet reaped) refers to that process forever: once it is reaped,
// pidfd_send_signal() fails with ESRCH instead of reaching a newcomer with the same pid.
// The spawner gets the pidfd atomically from clone(CLONE_PIDFD), so there is no window at
// all for processes we start. For pids learnt later (e.g. a container's init from runc's
// pid file) open the handle as soon as the pid is known and before acting on that pid's
// exit; the residual window is the time between reap and open, and a pid can only come
// back after the kernel's pid counter wrapped around pid_max.
//
// Kernels without pidfds (< 5.3): the handle holds only the pid and signal() falls back
// to kill(2); mark_reaped() (called when the reaper reports the exit) then makes signal()
// refuse, which closes the gap as far as the shim's own bookkeeping can.
#pragma once

#include <sys/types.h>

#include "shim/status.h"

namespace shim {

class ProcessHandle {
 public:
  ProcessHandle() = default;
  // Adopts `pidfd` (-1: none, kill(2) fallback).
  ProcessHandle(pid_t pid, int pidfd) : pid_(pid), pidfd_(pidfd) {}
  ~ProcessHandle();                                          // closes the pidfd
  ProcessHandle(ProcessHandle&& other) noexcept;             // takes over `other`'s pid and pidfd
  ProcessHandle& operator=(ProcessHandle&& other) noexcept;  // closes its own pidfd first
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;

  // pidfd_open(pid). NotFound if no such process; on kernels without pidfd_open the
  // handle is returned without a pidfd (see above).
  static Status open(pid_t pid, ProcessHandle* handle);
  // Whether this kernel has pidfd_open / pidfd_send_signal.
  static bool pidfd_supported();

  // Whether it names a process at all.
  bool valid() const { return pid_ > 0; }
  // The process's pid (as given; not positive when not valid()).
  pid_t pid() const { return pid_; }
  // -1 without a pidfd. Readable (poll) once the process has exited.
  int pidfd() const { return pidfd_; }
  bool has_pidfd() const { return pidfd_ >= 0; }

  // Sends `sig` (0 checks existence). NotFound "... process already finished: not found"
  // once the process has been reaped (or mark_reaped() was called); a zombie not yet
  // reaped still accepts signals, as with kill(2).
  Status signal(int sig) const;
  void mark_reaped() { reaped_ = true; }
  bool reaped() const { return reaped_; }

  // Closes the pidfd and forgets the pid.
  void reset();

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  bool reaped_ = false;
};

}  // namespace shim
