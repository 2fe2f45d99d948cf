// InstanceEvents: what an Instance whose processes are not the shim's children reports
// itself (shim/runtime.h, Instance::exit_source() kInstance): the processes of a guest
// VM, of an engine shared by many shims, of a remote agent. libshim then never looks their
// pids up on the host; each exit, and each OOM, comes from here instead of the reaper and
// the cgroup watch, and goes out in containerd's order as any other
// (shim/events/lifecycle_events.h).
//
// Threading: thread-safe, from any thread (it posts to the shim's loop); events of one
// InstanceEvents keep the order of the calls. Calls after the container was deleted are
// ignored.
#pragma once

#include <chrono>
#include <cstdint>

namespace shim {

class InstanceEvents {
 public:
  virtual ~InstanceEvents() = default;

  // Process `pid` (as create(), start() or exec() reported it) ended with `status`, the
  // exit code or 128 + the signal that killed it, at `exited_at`. Report an exit once its
  // output reached the stdio fds libshim gave (a TaskExit promises all output was sent).
  virtual void process_exited(std::uint32_t pid, int status,
                              std::chrono::system_clock::time_point exited_at) = 0;
  // The container's memory limit was hit: a TaskOOM (before the init's TaskExit when
  // reported before its exit).
  virtual void out_of_memory() = 0;
};

}  // namespace shim
