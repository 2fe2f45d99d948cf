// spawn_child's process settings: oom_score_adj, the controlling terminal, umask,
// no_new_privs, rlimits, the user and the capabilities. Raw system calls only (see
// spawn_child.h). The order and the rules follow runc: libcontainer/nsenter/nsexec.c
// (oom_score_adj first), standard_init_linux.go and setns_init_linux.go (the console,
// umask, no_new_privs), process_linux.go (rlimits before the user changes),
// init_linux.go's finalizeNamespace, setupUser and fixStdioPermissions, and
// libcontainer/capabilities/capabilities.go.
#include "process/spawn_child_steps.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include <cerrno>

namespace shim::spawn {
namespace {

constexpr std::uint64_t bit(int cap) { return std::uint64_t{1} << cap; }

LIBSHIM_CHILD_CODE void write_all(ChildPlan* plan, int fd, const char* text, int length) {
  long n;
  do {
    n = ::syscall(SYS_write, fd, text, length);
  } while (n < 0 && errno == EINTR);
  if (n != length) {
    if (n >= 0) errno = EIO;
    child_fail(plan, ChildStep::kOomScoreAdj, 0);
  }
}

// fixStdioPermissions: the process's user must be able to reopen its stdio through
// /proc/self/fd (/dev/stdout). /dev/null is left alone; EPERM and EROFS are not errors.
LIBSHIM_CHILD_CODE void chown_stdio(ChildPlan* plan) {
  for (int fd = 0; fd < 3; ++fd) {
    struct statx st {};
    if (::syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_UID, &st) < 0)
      child_fail(plan, ChildStep::kStdioOwner, fd);
    bool dev_null = S_ISCHR(st.stx_mode) && st.stx_rdev_major == 1 && st.stx_rdev_minor == 3;
    if (dev_null || st.stx_uid == plan->uid) continue;
    if (::syscall(SYS_fchown, fd, plan->uid, static_cast<gid_t>(-1)) < 0 && errno != EPERM &&
        errno != EROFS)
      child_fail(plan, ChildStep::kStdioOwner, fd);
  }
}

LIBSHIM_CHILD_CODE void drop_bounding_set(ChildPlan* plan) {
  for (int cap = 0; cap <= plan->cap_last_cap; ++cap) {
    if ((plan->cap_bounding & bit(cap)) != 0) continue;
    if (::syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
      child_fail(plan, ChildStep::kBoundingSet, cap);
  }
}

LIBSHIM_CHILD_CODE void set_user(ChildPlan* plan) {
  chown_stdio(plan);
  if (::syscall(SYS_setgroups, plan->group_count, plan->groups) < 0)
    child_fail(plan, ChildStep::kSetgroups, 0);
  if (::syscall(SYS_setgid, plan->gid) < 0) child_fail(plan, ChildStep::kSetgid, 0);
  if (::syscall(SYS_setuid, plan->uid) < 0) child_fail(plan, ChildStep::kSetuid, 0);
}

LIBSHIM_CHILD_CODE void set_capabilities(ChildPlan* plan) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  for (int word = 0; word < 2; ++word) {
    int shift = 32 * word;
    data[word].effective = static_cast<std::uint32_t>(plan->cap_effective >> shift);
    data[word].permitted = static_cast<std::uint32_t>(plan->cap_permitted >> shift);
    data[word].inheritable = static_cast<std::uint32_t>(plan->cap_inheritable >> shift);
  }
  if (::syscall(SYS_capset, &header, data) < 0) child_fail(plan, ChildStep::kCapset, 0);
  // EINVAL: a kernel without ambient capabilities (< 4.3), which runc tolerates too.
  if (::syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
      errno != EINVAL)
    child_fail(plan, ChildStep::kAmbientCaps, -1);
  for (int cap = 0; cap <= plan->cap_last_cap; ++cap) {
    if ((plan->cap_ambient & bit(cap)) == 0) continue;
    if (::syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
      child_fail(plan, ChildStep::kAmbientCaps, cap);
  }
}

}  // namespace

// Raising the score is open to anyone, lowering it needs CAP_SYS_RESOURCE: done first,
// while the child still has every capability of the shim.
LIBSHIM_CHILD_CODE void child_set_oom_score_adj(ChildPlan* plan) {
  if (plan->oom_score_adj == nullptr) return;
  long fd = ::syscall(SYS_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) child_fail(plan, ChildStep::kOomScoreAdj, 0);
  write_all(plan, static_cast<int>(fd), plan->oom_score_adj, plan->oom_score_adj_length);
  ::syscall(SYS_close, fd);
}

LIBSHIM_CHILD_CODE void child_set_controlling_terminal(ChildPlan* plan) {
  if (plan->controlling_terminal && ::syscall(SYS_ioctl, 0, TIOCSCTTY, 0) < 0)
    child_fail(plan, ChildStep::kControllingTerminal, 0);
}

// runc sets umask and no_new_privs in its init, and the rlimits from the parent once
// the init is ready, all before finalizeNamespace changes the user: a hard limit can be
// raised only with CAP_SYS_RESOURCE. (no_new_privs does not stand in the way of the
// setuid and capset below: it only limits what a later execve may grant.)
LIBSHIM_CHILD_CODE void child_apply_limits(ChildPlan* plan) {
  if (plan->umask >= 0) ::syscall(SYS_umask, plan->umask);
  if (plan->no_new_privileges && ::syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    child_fail(plan, ChildStep::kNoNewPrivileges, 0);
  for (int i = 0; i < plan->rlimit_count; ++i) {
    const ChildRlimit& limit = plan->rlimits[i];
    std::uint64_t values[2] = {limit.soft, limit.hard};  // the kernel's struct rlimit64
    if (::syscall(SYS_prlimit64, 0, limit.resource, values, nullptr) < 0)
      child_fail(plan, ChildStep::kRlimit, i);
  }
}

// finalizeNamespace's order: the bounding set while the child may still drop from it
// (CAP_SETPCAP), keep the permitted capabilities across setuid, the user, the chdir a
// root could not do, then capset and the ambient set as that user.
LIBSHIM_CHILD_CODE void child_apply_credentials(ChildPlan* plan) {
  if (plan->has_capabilities) drop_bounding_set(plan);
  if (plan->has_user) {
    if (::syscall(SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
      child_fail(plan, ChildStep::kKeepCaps, 0);
    set_user(plan);
    const char* cwd = plan->cwd != nullptr ? plan->cwd : "/";  // only a chroot's "/" is implicit
    if (plan->chdir_after_user && ::syscall(SYS_chdir, cwd) < 0)
      child_fail(plan, ChildStep::kChdir, 0);
    if (::syscall(SYS_prctl, PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
      child_fail(plan, ChildStep::kKeepCaps, 0);
  }
  if (plan->has_capabilities) set_capabilities(plan);
}

}  // namespace shim::spawn
