// spawn_child's search for an executable, in the child after root, cwd, user and
// capabilities are in place: Go's exec.LookPath (os/exec/lp_unix.go) as runc calls it in
// libcontainer/standard_init_linux.go and setns_init_linux.go, after finalizeNamespace,
// with the PATH of the process's own env (libcontainer/env.go's prepareEnv).
//
// Why here and not in the parent: the child sees what the process will see (its mount
// namespace with /proc, /dev and any volume mounted in it, its root, its cwd for
// relative entries) and asks the kernel with the process's own credentials, so the
// permission checks are the process's, not the shim's root's. Raw system calls only.
#include "process/spawn_child_steps.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace shim::spawn {
namespace {

// faccessat with the effective ids (AT_EACCESS), as Go's unix.Eaccess. Without
// faccessat2 (< 5.8), plain faccessat uses the real ids: after setuid/setgid they are
// the same, and without a change of user the shim's are the same too.
LIBSHIM_CHILD_CODE long may_execute(const char* path) {
#ifdef SYS_faccessat2
  long result = ::syscall(SYS_faccessat2, AT_FDCWD, path, X_OK, AT_EACCESS);
  if (result == 0 || errno != ENOSYS) return result;
#endif
  return ::syscall(SYS_faccessat, AT_FDCWD, path, X_OK);
}

// Go's findExecutable: it exists (symlinks followed), is no directory, and may be
// executed; where the access check itself is refused (EPERM under a seccomp profile,
// ENOSYS) any execute bit will do.
LIBSHIM_CHILD_CODE bool executable(const char* path) {
  struct statx st {};
  if (::syscall(SYS_statx, AT_FDCWD, path, 0, STATX_TYPE | STATX_MODE, &st) < 0) return false;
  if (S_ISDIR(st.stx_mode)) return false;
  if (may_execute(path) == 0) return true;
  if (errno != EPERM && errno != ENOSYS) return false;
  return (st.stx_mode & 0111) != 0;
}

}  // namespace

// Any failure of a candidate (ENOENT, ENOTDIR, EACCES, ELOOP...) moves on to the next,
// as LookPath does; only when none is left is it an error.
LIBSHIM_CHILD_CODE int child_find_executable(ChildPlan* plan) {
  if (!plan->search) return -1;
  for (int i = 0; i < plan->candidate_count; ++i) {
    if (!executable(plan->candidates[i])) continue;
    if (plan->candidate_relative[i]) {  // Go 1.19+: exec.ErrDot
      errno = 0;
      child_fail(plan, ChildStep::kFoundRelative, i);
    }
    return i;
  }
  errno = ENOENT;
  child_fail(plan, ChildStep::kNotFound, 0);
}

}  // namespace shim::spawn
