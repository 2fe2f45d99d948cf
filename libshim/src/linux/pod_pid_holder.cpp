#include "linux/pod_pid_holder.h"

#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "shim/fs.h"

namespace shim::linux_pod {

namespace {

void ignore_signal(int) {}

// The holder's whole life, in the child of a multithreaded process: async-signal-safe
// calls only (no malloc, no locks, no C++ runtime), and never a return.
[[noreturn]] void holder_main() {
  ::syscall(SYS_close_range, 0U, ~0U, 0U);  // no fd of the shim's stays open in the pod
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);       // the shim gone, the pod's pid namespace goes
  struct sigaction action {};
  action.sa_handler = ignore_signal;  // a handler, not SIG_IGN: SIGCHLD must wake sigsuspend
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &action, nullptr);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  // Blocked outside sigsuspend, so a SIGCHLD between waitpid and sigsuspend is not lost.
  ::sigprocmask(SIG_SETMASK, &chld, nullptr);
  sigset_t none;
  sigemptyset(&none);
  for (;;) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::sigsuspend(&none);
  }
}

}  // namespace

shim::Status start_pid_holder(shim::ProcessHandle* handle) {
  // The raw syscall: glibc's clone() wants a stack and fork() has no flags. Without a new
  // stack the child goes on from here on a copy of the caller's, like fork.
  long pid = ::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid < 0) return shim::errno_error("clone a pid namespace holder", errno);
  if (pid == 0) holder_main();
  if (shim::Status s = shim::ProcessHandle::open(static_cast<pid_t>(pid), handle); !s.ok()) {
    ::kill(static_cast<pid_t>(pid), SIGKILL);  // not reaped yet (the loop reaps): still ours
    return s;
  }
  return {};
}

}  // namespace shim::linux_pod
