#include "process/spawn_child.h"

#include "process/spawn_child_steps.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio_ext.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace shim::spawn {
namespace {

LIBSHIM_CHILD_CODE void child_report(int fd, ChildStep step, int error, int index) {
  ChildReport report{step, error, index};
  const char* bytes = reinterpret_cast<const char*>(&report);
  for (std::size_t done = 0; done < sizeof report;) {
    long n = ::syscall(SYS_write, fd, bytes + done, sizeof report - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

LIBSHIM_CHILD_CODE void child_reset_signal_dispositions() {
  // An all-zero kernel sigaction is SIG_DFL with no flags and an empty mask on every
  // layout; 64 bytes covers the largest one.
  alignas(8) unsigned char default_action[64] = {};
  for (int sig = 1; sig < 65; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::syscall(SYS_rt_sigaction, sig, default_action, nullptr, kKernelSigsetSize);
  }
}

LIBSHIM_CHILD_CODE void child_set_session(ChildPlan* plan) {
  if (plan->new_session || plan->controlling_terminal) {
    if (::syscall(SYS_setsid) < 0) child_fail(plan, ChildStep::kSession, 0);
    return;
  }
  if (plan->new_process_group && ::syscall(SYS_setpgid, 0, 0) < 0)
    child_fail(plan, ChildStep::kProcessGroup, 0);
}

LIBSHIM_CHILD_CODE void child_enter_namespaces(ChildPlan* plan) {
  if (plan->join_namespaces != 0 &&
      ::syscall(SYS_setns, plan->join_pidfd, plan->join_namespaces) < 0)
    child_fail(plan, ChildStep::kJoinNamespaces, 0);
  child_enter_namespace_files(plan);
  // A new mount namespace starts as a copy whose mounts still propagate to and from the
  // host's: make it private before anything is mounted in it.
  if (plan->private_mounts &&
      ::syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
    child_fail(plan, ChildStep::kPrivateMounts, 0);
}

LIBSHIM_CHILD_CODE void child_map_fds(ChildPlan* plan) {
  // Copy every source above all targets first, so a dup3 onto a target can never clobber
  // a source still needed (e.g. child 3 <- parent 4 and child 4 <- parent 3).
  for (int i = 0; i < plan->fd_count; ++i) {
    long copy = ::syscall(SYS_fcntl, plan->parent_fds[i], F_DUPFD_CLOEXEC, plan->scratch_base);
    if (copy < 0) child_fail(plan, ChildStep::kFds, i);
    plan->scratch_fds[i] = static_cast<int>(copy);
  }
  for (int i = 0; i < plan->fd_count; ++i) {
    int flags = plan->child_fd_flags != nullptr ? plan->child_fd_flags[i] : 0;
    if (::syscall(SYS_dup3, plan->scratch_fds[i], plan->child_fds[i], flags) < 0)
      child_fail(plan, ChildStep::kFds, i);
  }
  if (plan->report_fd >= 0) plan->report_fd = plan->report_fd_mapped;  // our own copy
}

LIBSHIM_CHILD_CODE void child_close_other_fds(ChildPlan* plan) {
  bool have_close_range = true;
  for (int i = 0; i < plan->close_count; ++i) {
    unsigned first = plan->close_first[i];
    unsigned last = plan->close_last[i];
    if (have_close_range) {
      if (::syscall(SYS_close_range, first, last, 0) == 0) continue;
      if (errno != ENOSYS) child_fail(plan, ChildStep::kCloseFds, i);
      have_close_range = false;
    }
    unsigned limit = last < plan->close_fallback_limit ? last : plan->close_fallback_limit;
    for (unsigned fd = first; fd <= limit; ++fd) ::syscall(SYS_close, fd);
  }
}

// The /dev of a container as runc makes it without a user namespace (libcontainer's
// rootfs_linux.go: tmpfs, default devices, /proc/self/fd links). Runs after chroot.
LIBSHIM_CHILD_CODE void child_mount_dev(ChildPlan* plan) {
  if (::syscall(SYS_mount, "tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME,
                "mode=755,size=65536k") < 0)
    child_fail(plan, ChildStep::kMountDev, 0);
  struct Device {
    const char* path;
    unsigned major, minor;
  };
  static constexpr Device kDevices[] = {{"/dev/null", 1, 3},    {"/dev/zero", 1, 5},
                                        {"/dev/full", 1, 7},    {"/dev/random", 1, 8},
                                        {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};
  int index = 1;
  for (const Device& device : kDevices) {
    unsigned long dev = ((device.major & 0xfffu) << 8) | (device.minor & 0xffu);
    if (::syscall(SYS_mknodat, AT_FDCWD, device.path, S_IFCHR | 0666, dev) < 0)
      child_fail(plan, ChildStep::kMountDev, index);
    // mknod obeys the umask: set the mode the devices must have.
    if (::syscall(SYS_fchmodat, AT_FDCWD, device.path, 0666) < 0)
      child_fail(plan, ChildStep::kMountDev, index);
    ++index;
  }
  static constexpr const char* kLinks[][2] = {{"/proc/self/fd", "/dev/fd"},
                                              {"/proc/self/fd/0", "/dev/stdin"},
                                              {"/proc/self/fd/1", "/dev/stdout"},
                                              {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto& link : kLinks) {
    if (::syscall(SYS_symlinkat, link[0], AT_FDCWD, link[1]) < 0)
      child_fail(plan, ChildStep::kMountDev, index);
    ++index;
  }
  static constexpr const char* kDirs[] = {"/dev/pts", "/dev/shm"};
  for (const char* dir : kDirs) {
    if (::syscall(SYS_mkdirat, AT_FDCWD, dir, 0755) < 0)
      child_fail(plan, ChildStep::kMountDev, index);
    ++index;
  }
}

LIBSHIM_CHILD_CODE void child_enter_root(ChildPlan* plan) {
  if (plan->root != nullptr) {
    if (plan->pivot_root) {
      child_pivot_root(plan);
    } else if (::syscall(SYS_chroot, plan->root) < 0) {
      child_fail(plan, ChildStep::kRoot, 0);
    }
  }
  const char* cwd = plan->cwd != nullptr ? plan->cwd : (plan->root != nullptr ? "/" : nullptr);
  if (cwd != nullptr && ::syscall(SYS_chdir, cwd) < 0) {
    // A cwd only the process's user may enter (a volume chowned to it): try again as
    // that user (runc's finalizeNamespace does the same).
    if (!plan->has_user || (errno != EACCES && errno != EPERM))
      child_fail(plan, ChildStep::kChdir, 0);
    plan->chdir_after_user = true;
  }
  if (plan->mount_proc &&
      ::syscall(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
    child_fail(plan, ChildStep::kMountProc, 0);
  if (plan->mount_dev) child_mount_dev(plan);
}

// A held child says it is ready (and which search candidate it will exec), then waits
// for the byte that lets it exec. EOF means the gate was dropped: leave without running
// anything.
LIBSHIM_CHILD_CODE void child_wait_at_gate(ChildPlan* plan, int found) {
  if (plan->gate_fd < 0) return;
  child_report(plan->report_fd, ChildStep::kReady, 0, found);
  char byte = 0;
  long n;
  do {
    n = ::syscall(SYS_read, plan->gate_fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) {
    for (;;) ::syscall(SYS_exit_group, 127);
  }
  ::syscall(SYS_close, plan->gate_fd);
}

// SpawnRequest::run_in_child: a forked copy of a single-threaded process, so ordinary
// code may run from here on. Closing the report pipe tells the parent (or the gate's
// release) that the child is running, as an exec would have.
[[noreturn]] void child_run_in_child(ChildPlan* plan) {
  if (plan->report_fd >= 0) ::close(plan->report_fd);
  // What the spawning process had buffered for its own stdout and stderr is its to write,
  // not the child's (fds 1 and 2 are the child's own now).
  ::__fpurge(stdout);
  ::__fpurge(stderr);
  int code = 127;
  try {
    code = (*plan->run_in_child)();
  } catch (...) {
    code = 127;
  }
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace

[[noreturn]] LIBSHIM_CHILD_CODE void child_fail(ChildPlan* plan, ChildStep step, int index) {
  plan->error_errno = errno;
  plan->error_step = step;
  plan->error_index = index;
  if (plan->report_fd >= 0) child_report(plan->report_fd, step, plan->error_errno, index);
  for (;;) ::syscall(SYS_exit_group, 127);
}

LIBSHIM_CHILD_CODE void child_set_parent_death_signal(ChildPlan* plan) {
  int sig = plan->parent_death_signal;
  if (sig == 0) return;
  if (::syscall(SYS_prctl, PR_SET_PDEATHSIG, sig, 0, 0, 0) < 0)
    child_fail(plan, ChildStep::kParentDeathSignal, 0);
  // The parent may have died before prctl: deliver the signal ourselves (it takes effect
  // when the mask is cleared below, or at once for SIGKILL).
  if (plan->parent_pid != 0 && ::syscall(SYS_getppid) != plan->parent_pid)
    ::syscall(SYS_kill, ::syscall(SYS_getpid), sig);
}

// The order follows runc (libcontainer/nsenter/nsexec.c for oom_score_adj, then
// standard_init_linux.go and init_linux.go's finalizeNamespace): oom_score_adj while
// still privileged, the console, the root, umask, no_new_privs and rlimits, then the
// user and capabilities, then the executable's search as that user, then exec.
LIBSHIM_CHILD_CODE int child_main(void* arg) {
  auto* plan = static_cast<ChildPlan*>(arg);
  // Every signal is blocked here (the parent blocked them around clone): no handler of
  // the shim can run in the child. Reset dispositions before unblocking.
  child_reset_signal_dispositions();
  child_set_parent_death_signal(plan);
  child_join_cgroups(plan);
  child_set_oom_score_adj(plan);
  child_set_session(plan);
  child_enter_namespaces(plan);
  child_set_hostname(plan);
  child_map_fds(plan);
  child_close_other_fds(plan);
  child_set_controlling_terminal(plan);
  child_mounts(plan);
  child_enter_root(plan);
  child_apply_limits(plan);
  child_apply_credentials(plan);
  if (plan->has_user) child_set_parent_death_signal(plan);  // cleared by setuid/setgid
  int found = child_find_executable(plan);
  child_wait_at_gate(plan, found);
  std::uint64_t empty_mask = 0;
  if (::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty_mask, nullptr, kKernelSigsetSize) < 0)
    child_fail(plan, ChildStep::kSignalMask, 0);
  if (plan->run_in_child != nullptr) child_run_in_child(plan);
  const char* path = found >= 0 ? plan->candidates[found] : plan->path;
  ::syscall(SYS_execve, path, plan->argv, plan->envp);
  child_fail(plan, ChildStep::kExec, found);
}

}  // namespace shim::spawn
