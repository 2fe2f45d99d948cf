// Moving a process into a cgroup (a write to cgroup.procs) takes the kernel's one global
// threadgroup rwsem for writing (kernel/cgroup/cgroup.c, cgroup_attach_lock). When no
// migration happened for about a grace period, that first waits for an RCU grace period
// (rcu_sync_enter): 7-15 ms measured on this project's test machine, cgroup v1 and v2
// alike unless the hierarchy is mounted with favordynmods. A runtime CLI (`runc create`,
// `runc exec`) moves its process through cgroup.procs, so it pays that wait in the middle
// of the Create or Exec. A no-op migration started just before the CLI runs (the shim's
// own pid into the cgroup it is in; ContainerConfig::warm_cgroup_migration) waits for
// the grace period on a pool thread instead, and migrations stay fast for ~20 ms after
// it. A child of libshim's spawner needs none on v1: it moves itself through `tasks`,
// which skips the lock (process/child_container.cpp). A pid that does not exist does not
// warm: this kernel looks the task up before it takes the lock. The cgroup is found again
// each time, as the Go shim loads it (through mountinfo, for a shim in a cgroup
// namespace), and written only if its cgroup.procs lists the shim's pid, so the write
// can never move the shim.
//
// Threading: warm() from any thread; the migration runs on the pool.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "shim/linux/cgroup.h"
#include "shim/process/work_pool.h"

namespace shim {

class CgroupMigrationWarmer {
 public:
  // `pool` must outlive the warmer's posted work (the daemon's pool does).
  explicit CgroupMigrationWarmer(WorkPool& pool);

  // Posts one no-op migration (after what the pool already has to do) unless one is
  // under way or one ended in the last 10 ms (the fast path still holds). Best effort: no
  // cgroup found, or a failed write (EBUSY), only means no warming.
  void warm();

  // The cgroup.procs that lists `pid` (v2: its unified cgroup's, unless threaded; v1: its
  // pids, memory or cpu hierarchy's), as load_cgroup() finds them, or "" if none does.
  static std::string member_procs_file(const CgroupFs& fs, CgroupVersion version, int pid);

 private:
  struct State {
    std::atomic<bool> busy{false};
    std::atomic<std::int64_t> ended_ns{0};  // steady clock
  };

  WorkPool& pool_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace shim
