// Reaper: collects every child of the shim and says who gets each exit.
//
//   * A child started with spawn_claimed() (the plug-in running `runc create` and waiting
//     for it) is claimed: its exit goes to the returned ExitFuture only, never to
//     subscribers. The claim is registered so that an exit between fork and registration
//     cannot be lost or fanned out.
//   * Every other exit (container processes, reparented orphans, unknown pids) is fanned
//     out to all subscribers, in reap order. The plug-in matches pids itself.
//
// Fan-out never blocks the reaper: each subscriber has its own queue (unbounded) drained
// by posts to the subscriber's executor, one exit per handler, so a slow subscriber only
// delays itself. Subscribers see exits reaped after they subscribed.
//
// Nobody else may wait for the shim's children (no waitpid(pid) elsewhere): the reaper
// must see every exit. The real one is libshim's signalfd subreaper (ServiceContext::reaper,
// or Manager::create_reaper's replacement); tests can substitute their own.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "shim/process/exit.h"
#include "shim/process/exit_future.h"
#include "shim/process/process_handle.h"
#include "shim/process/spawner.h"
#include "shim/process/subscription.h"
#include "shim/status.h"

namespace shim {

// Receives one exit the reaper fans out.
using ExitCallback = std::function<void(const ProcessExit&)>;

// A child whose exit was claimed by the caller that started it.
struct ClaimedProcess {
  pid_t pid = -1;        // the child the caller started
  ProcessHandle handle;  // signal it (e.g. SIGKILL on timeout) without pid-reuse risk
  ExitFuture exit;       // wait() on a pool thread, or async_wait() from the loop
};

class Reaper {
 public:
  virtual ~Reaper() = default;

  // Fan-out on the reaper's own executor (the shim's loop).
  virtual Subscription subscribe(ExitCallback callback) = 0;
  // Fan-out on `executor`: give a slow consumer its own executor (a strand on another
  // thread) and it will not hold up the loop either.
  virtual Subscription subscribe(boost::asio::any_io_executor executor, ExitCallback callback) = 0;

  // Starts `request` with `spawner` and claims the child's exit. Thread-safe; meant for
  // pool threads (the spawn blocks until the child exec'd). On error nothing runs, and
  // the exit of a child that failed to exec is swallowed.
  virtual Status spawn_claimed(Spawner& spawner, const SpawnRequest& request,
                               ClaimedProcess* process) = 0;

  // Claims the exit of `pid`, a child already running: one the previous program of this
  // process started, carried across a live upgrade's exec (shim/live_upgrade.h). Call it
  // before the reaper starts reaping, as its exit may be waiting as a zombie. The default
  // answers Unimplemented: such a reaper cannot carry those children.
  virtual Status claim_running(pid_t pid, ExitFuture* exit) {
    (void)exit;
    return Status(Code::kUnimplemented,
                  "this reaper cannot claim the running child " + std::to_string(pid));
  }
};

}  // namespace shim
