// Moving a process into a cgroup (a write to cgroup.procs) takes the kernel's one global
// threadgroup rwsem for writing (kernel/cgroup/cgroup.c, cgroup_attach_lock). When no
// migration happened for about a grace period, that first waits for an RCU grace period
// (rcu_sync_enter): 7-15 ms measured on this project's test machine, cgroup v1 and v2
// alike unless the hierarchy is mounted with favordynmods. Every Create migrates its
// container's init, so it pays that wait in the middle of the Create. A no-op migration
// started when a Create is known to come (the shim's own pid into its own cgroup) waits
// for the grace period on a pool thread instead, and migrations stay fast for ~20 ms
// after it.
//
// Threading: warm() from any thread; the migration runs on the pool.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "shim/process/work_pool.h"

namespace shim {

class CgroupMigrationWarmer {
 public:
  // `pool` must outlive the warmer's posted work (the daemon's pool does).
  explicit CgroupMigrationWarmer(WorkPool& pool);

  // Posts one no-op migration unless one is under way or one ended in the last 10 ms (the
  // fast path still holds). Best effort: a failure (no cgroup file, EBUSY) is ignored.
  void warm();

  // This process's own cgroup.procs (v2: the unified cgroup's; v1: the pids, memory or cpu
  // hierarchy's), or "" if there is none. `proc_cgroup` is /proc/self/cgroup's text.
  static std::string own_procs_file(const std::string& proc_cgroup,
                                    const std::string& root = "/sys/fs/cgroup");

 private:
  struct State {
    std::atomic<bool> busy{false};
    std::atomic<std::int64_t> ended_ns{0};  // steady clock
    std::string procs_file;                 // found once, on the first warm()
    bool looked = false;
  };

  WorkPool& pool_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace shim
