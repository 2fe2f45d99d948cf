// The pid 1 of a pod whose containers share a pid namespace (namespace_options.pid ==
// POD): a pid namespace needs a first process, and the shim itself cannot be it (its own
// pid namespace cannot change). The holder is a forked copy of the shim that does no
// exec: it closes every fd and only waits for signals, reaping the orphans the kernel
// hands a namespace's init, as the pause container does. It holds, besides the pid
// namespace, the net/ipc/uts namespaces of the thread that forked it (the main thread,
// in the pod's by then), so CRI can join all four through /proc/<holder>/ns.
#pragma once

#include "shim/process/process_handle.h"
#include "shim/status.h"

namespace shim::linux_pod {

// Forks the holder with clone(CLONE_NEWPID | SIGCHLD) from the calling thread, and opens
// a pidfd handle on it before returning (call it from the loop: the shim's reaper reaps on
// the loop too, so the pid cannot be reaped and reused before the handle exists). The
// holder is the caller's child: libshim's reaper collects its exit and fans it out (pid
// in `handle`). It dies with the shim's main thread (PR_SET_PDEATHSIG) and on SIGKILL.
shim::Status start_pid_holder(shim::ProcessHandle* handle);

}  // namespace shim::linux_pod
