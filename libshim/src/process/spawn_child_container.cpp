// The steps of spawn_child that make a container without an OCI CLI (SpawnRequest's
// cgroup_procs, join_namespace_files, hostname, mounts, pivot_root). Same rules as
// spawn_child.cpp: raw system calls only.
#include "process/spawn_child_steps.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace shim::spawn {

LIBSHIM_CHILD_CODE void child_join_cgroups(ChildPlan* plan) {
  for (int i = 0; i < plan->cgroup_proc_count; ++i) {
    long fd = ::syscall(SYS_openat, AT_FDCWD, plan->cgroup_procs[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0) child_fail(plan, ChildStep::kCgroup, i);
    // "0" is the writing process (cgroup v1 and v2).
    long n;
    do {
      n = ::syscall(SYS_write, fd, "0", 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) child_fail(plan, ChildStep::kCgroup, i);
    ::syscall(SYS_close, fd);
  }
}

LIBSHIM_CHILD_CODE void child_enter_namespace_files(ChildPlan* plan) {
  for (int i = 0; i < plan->namespace_count; ++i) {
    if (::syscall(SYS_setns, plan->namespace_fds[i], plan->namespace_types[i]) < 0)
      child_fail(plan, ChildStep::kJoinNamespaceFile, i);
  }
}

LIBSHIM_CHILD_CODE void child_set_hostname(ChildPlan* plan) {
  if (plan->hostname == nullptr) return;
  if (::syscall(SYS_sethostname, plan->hostname, plan->hostname_length) < 0)
    child_fail(plan, ChildStep::kHostname, 0);
}

LIBSHIM_CHILD_CODE void child_mounts(ChildPlan* plan) {
  for (int i = 0; i < plan->mount_count; ++i) {
    const char* target = plan->mount_targets[i];
    if (::syscall(SYS_mount, plan->mount_sources[i], target, plan->mount_types[i],
                  plan->mount_flags[i], plan->mount_data[i]) < 0)
      child_fail(plan, ChildStep::kMount, i);
    // A bind mount takes ro, nosuid... only on a remount of itself.
    if (plan->mount_remount_flags[i] != 0 &&
        ::syscall(SYS_mount, nullptr, target, nullptr, plan->mount_remount_flags[i], nullptr) < 0)
      child_fail(plan, ChildStep::kRemount, i);
    if (plan->mount_propagation[i] != 0 &&
        ::syscall(SYS_mount, nullptr, target, nullptr, plan->mount_propagation[i], nullptr) < 0)
      child_fail(plan, ChildStep::kPropagation, i);
  }
}

// libcontainer's pivotRoot (rootfs_linux.go): the root must be a mount point, so bind it
// onto itself; pivot_root(".", ".") stacks the old root on the new one, and a lazy unmount
// of "." then takes the old root away.
LIBSHIM_CHILD_CODE void child_pivot_root(ChildPlan* plan) {
  if (::syscall(SYS_mount, plan->root, plan->root, nullptr, MS_BIND | MS_REC, nullptr) < 0 ||
      ::syscall(SYS_chdir, plan->root) < 0 || ::syscall(SYS_pivot_root, ".", ".") < 0)
    child_fail(plan, ChildStep::kPivotRoot, 0);
  // The old root's mounts must not propagate the unmount back to the host.
  if (::syscall(SYS_mount, nullptr, ".", nullptr, MS_REC | MS_SLAVE, nullptr) < 0 ||
      ::syscall(SYS_umount2, ".", MNT_DETACH) < 0 || ::syscall(SYS_chdir, "/") < 0)
    child_fail(plan, ChildStep::kPivotRoot, 1);
}

}  // namespace shim::spawn
