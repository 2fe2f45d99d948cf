// The child side of PosixSpawner: what runs between clone() and execve(). Raw system
// calls only (async-signal-safe: no malloc, no locks, no libc state), because the child
// either shares the shim's memory (CLONE_VM|CLONE_VFORK) or is a copy of a multithreaded
// process. Everything it needs is prepared by the parent in a ChildPlan.
#pragma once

#include <cstddef>
#include <cstdint>

#include <sys/types.h>

namespace shim::spawn {

// The kernel's sigset_t is 64 bits on every architecture we build for.
inline constexpr std::size_t kKernelSigsetSize = 8;

enum class ChildStep : std::int32_t {
  kNone = 0,
  kReady,  // not an error: a held child is ready to exec
  kParentDeathSignal,
  kSession,
  kProcessGroup,
  kJoinNamespaces,
  kPrivateMounts,
  kFds,
  kCloseFds,
  kRoot,
  kChdir,
  kMountProc,
  kMountDev,
  kSignalMask,
  kExec,
};

// What a forked child writes on its report pipe: an error, or kReady.
struct ChildReport {
  ChildStep step = ChildStep::kNone;
  std::int32_t error = 0;  // errno
  std::int32_t index = 0;  // which fd mapping failed
};

struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;   // nullptr: keep the shim's (or "/" under root)
  const char* root = nullptr;  // chroot here first
  const int* child_fds = nullptr;
  const int* parent_fds = nullptr;
  const int* child_fd_flags = nullptr;  // O_CLOEXEC for the report/gate fds, else 0
  int* scratch_fds = nullptr;
  int fd_count = 0;
  int scratch_base = 0;  // temporary copies go at or above this fd number
  const unsigned* close_first = nullptr;
  const unsigned* close_last = nullptr;
  int close_count = 0;
  unsigned close_fallback_limit = 0;  // for kernels without close_range
  int parent_death_signal = 0;
  pid_t parent_pid = 0;  // 0: do not compare (the child is in a new pid namespace)
  bool new_session = false;
  bool new_process_group = false;
  int join_pidfd = -1;
  int join_namespaces = 0;  // without CLONE_NEWPID, which the parent thread enters
  bool private_mounts = false;
  bool mount_proc = false;
  bool mount_dev = false;
  // Forked children report through a pipe: its fd before and after the fd mapping.
  int report_fd = -1;  // -1 (vfork): the error fields below, read by the parent
  int report_fd_mapped = -1;
  int gate_fd = -1;  // held: one byte here lets it exec (fd number after mapping)

  ChildStep error_step = ChildStep::kNone;
  int error_errno = 0;
  int error_index = 0;
};

// clone()'s entry point; never returns.
int child_main(void* plan);

}  // namespace shim::spawn
