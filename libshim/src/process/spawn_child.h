// The child side of PosixSpawner: what runs between clone() and execve(). Raw system
// calls only (async-signal-safe: no malloc, no locks, no libc state), because the child
// either shares the shim's memory (CLONE_VM|CLONE_VFORK) or is a copy of a multithreaded
// process. Everything it needs is prepared by the parent in a ChildPlan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

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
  kExec,  // index: the search candidate exec'd (-1: the plan's path)
  kOomScoreAdj,
  kControllingTerminal,
  kRlimit,  // index: which rlimit
  kNoNewPrivileges,
  kBoundingSet,  // index: the capability that could not be dropped
  kKeepCaps,
  kStdioOwner,  // index: the fd (0-2)
  kSetgroups,
  kSetgid,
  kSetuid,
  kCapset,
  kAmbientCaps,        // index: the capability that could not be raised
  kNotFound,           // the search found no executable (error ENOENT)
  kFoundRelative,      // index: the candidate, found through a relative search entry
  kCgroup,             // index: which cgroup.procs file
  kJoinNamespaceFile,  // index: which namespace file
  kHostname,
  kMount,        // index: which mount
  kRemount,      // index: which mount (a bind mount's remount with its flags)
  kPropagation,  // index: which mount (its propagation)
  kPivotRoot,
};

// What a forked child writes on its report pipe: an error, or kReady.
struct ChildReport {
  ChildStep step = ChildStep::kNone;
  std::int32_t error = 0;  // errno
  // Which fd mapping, rlimit, capability... failed; with kReady the search candidate
  // found (-1: no search).
  std::int32_t index = 0;
};

// The kernel's rlimit64 (prlimit64(2)), two 64-bit values on every architecture.
struct ChildRlimit {
  int resource = 0;
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
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

  // The process's own settings (SpawnRequest's fields of the same names).
  const char* oom_score_adj = nullptr;  // decimal text; nullptr: unchanged
  int oom_score_adj_length = 0;
  bool controlling_terminal = false;
  int umask = -1;  // -1: unchanged
  const ChildRlimit* rlimits = nullptr;
  int rlimit_count = 0;
  bool no_new_privileges = false;
  bool has_capabilities = false;
  int cap_last_cap = 0;  // /proc/sys/kernel/cap_last_cap: the highest capability number
  std::uint64_t cap_bounding = 0, cap_effective = 0, cap_permitted = 0, cap_inheritable = 0,
                cap_ambient = 0;  // already masked to the kernel's capabilities
  bool has_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  const gid_t* groups = nullptr;
  int group_count = 0;
  // A `path` without '/' searched in the child: each candidate is "<entry>/<path>"
  // (cleaned), `candidate_relative[i]` when its entry was relative. Set `search` even
  // when there are no candidates (no PATH: not found).
  bool search = false;
  char* const* candidates = nullptr;
  const bool* candidate_relative = nullptr;
  int candidate_count = 0;
  bool chdir_after_user = false;  // set by the child: the first chdir was refused (EACCES)

  // Container pieces (SpawnRequest's fields of the same names; child_container.h).
  const char* const* cgroup_procs = nullptr;
  int cgroup_proc_count = 0;
  const int* namespace_types = nullptr;  // join_namespace_files without CLONE_NEWPID
  const int* namespace_fds = nullptr;
  int namespace_count = 0;
  const char* hostname = nullptr;
  int hostname_length = 0;
  const char* const* mount_sources = nullptr;
  const char* const* mount_targets = nullptr;  // resolved inside root, as the host sees it
  const char* const* mount_types = nullptr;    // nullptr entries: bind mounts
  const char* const* mount_data = nullptr;     // nullptr entries: none
  const unsigned long* mount_flags = nullptr;
  const unsigned long* mount_remount_flags = nullptr;  // 0: no remount
  const unsigned long* mount_propagation = nullptr;    // 0: none
  int mount_count = 0;
  bool pivot_root = false;
  const std::function<int()>* run_in_child = nullptr;  // instead of execve

  ChildStep error_step = ChildStep::kNone;
  int error_errno = 0;
  int error_index = 0;
};

// clone()'s entry point; never returns.
int child_main(void* plan);

}  // namespace shim::spawn
