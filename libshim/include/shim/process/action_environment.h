// ActionEnvironment: a reaper and spawner for the short-lived actions (`delete`, `-info`,
// `start`), which have no long-lived server loop but may need to run the runtime
// (`runc delete --force`, `runc features`) and get its exit status the same way the
// daemon does. It runs an event loop with a SignalfdReaper on a background thread.
//
// Construct it at the start of the action, before any other thread exists (SIGCHLD is
// blocked in the constructing thread, and threads inherit that). Calls that wait for a
// child (Reaper::spawn_claimed + ExitFuture::wait) are made from the action's thread.
#pragma once

#include <memory>

#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim {

class ActionEnvironment {
 public:
  ActionEnvironment();
  ~ActionEnvironment();  // stops the loop thread
  ActionEnvironment(const ActionEnvironment&) = delete;
  ActionEnvironment& operator=(const ActionEnvironment&) = delete;

  // The reaper and the spawner to run the runtime with; valid while this lives.
  Reaper& reaper();
  Spawner& spawner();
  // Whether its reaper runs (SIGCHLD blocked, the signalfd watched): without it no
  // child's exit would be seen, and a wait for one would never end.
  Status status() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shim
