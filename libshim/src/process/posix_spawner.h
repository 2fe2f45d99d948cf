// PosixSpawner: the real Spawner.
//
// It does what posix_spawn() does inside glibc (clone with CLONE_VM|CLONE_VFORK on a
// private stack: no page-table copy, the caller resumes once the child has exec'd) but
// also supports what posix_spawn cannot: the parent-death signal, a pidfd obtained
// atomically (CLONE_PIDFD), and a precise close-every-other-fd step (close_range). The
// child runs raw system calls only (async-signal-safe, no malloc, no locks), so spawning
// from a multi-threaded shim is safe. In the child, every signal disposition is reset to
// the default and the signal mask is emptied, so runtimes do not inherit the shim's
// blocked SIGCHLD/SIGTERM (signalfd) or its ignored SIGPIPE.
#pragma once

#include "shim/process/spawner.h"

namespace shim {

class PosixSpawner final : public Spawner {
 public:
  Status spawn(const SpawnRequest& request, SpawnedProcess* process) override;
};

}  // namespace shim
