// The steps of spawn_child that live in files of their own (the process's settings and
// the executable search), and what they share with child_main. Same rules as
// spawn_child.h: raw system calls only, no malloc, no locks, uninstrumented.
#pragma once

#include "process/spawn_child.h"

// The child may share the parent's memory until it execs: its code must not be
// instrumented (sanitizer shadow writes on a private stack) nor inlined into the parent.
#define LIBSHIM_CHILD_CODE __attribute__((no_sanitize("address", "undefined"), noinline))

namespace shim::spawn {

// Records errno and `step` (and reports them on the pipe of a forked child), then exits
// 127. `index` says which fd, rlimit or capability.
[[noreturn]] void child_fail(ChildPlan* plan, ChildStep step, int index);

// PR_SET_PDEATHSIG again: a change of credentials clears it.
void child_set_parent_death_signal(ChildPlan* plan);

// Writes /proc/self/oom_score_adj (still the host's /proc: before namespaces and root).
void child_set_oom_score_adj(ChildPlan* plan);
// TIOCSCTTY on fd 0 (the child is a session leader by then).
void child_set_controlling_terminal(ChildPlan* plan);
// umask, no_new_privs, rlimits: everything before the change of credentials.
void child_apply_limits(ChildPlan* plan);
// Bounding set, keep-caps, stdio owner, setgroups/setgid/setuid, a deferred chdir,
// capset, ambient capabilities.
void child_apply_credentials(ChildPlan* plan);
// Container pieces (spawn_child_container.cpp). Writes the child into its cgroups.
void child_join_cgroups(ChildPlan* plan);
// setns into the namespace files (after join_pidfd's).
void child_enter_namespace_files(ChildPlan* plan);
// sethostname, once in its namespaces.
void child_set_hostname(ChildPlan* plan);
// The mounts, in the new (private) mount namespace, before the root is entered.
void child_mounts(ChildPlan* plan);
// pivot_root into plan->root, detaching the old root; then the cwd as chroot's path does.
void child_pivot_root(ChildPlan* plan);

// The plan's search: the index of the candidate to exec, or -1 when there is no search.
// Fails the child (kNotFound, kFoundRelative) when nothing usable is found.
int child_find_executable(ChildPlan* plan);

}  // namespace shim::spawn
