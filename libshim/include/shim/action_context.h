// ActionContext: what libshim hands a plug-in in the short-lived actions containerd runs
// the shim binary for (`delete`, `-info`), as ServiceContext serves the daemon. Nothing
// here is global: tests build an ActionContext from fakes.
//
// Threading: an action has no event loop; the plug-in's method runs on the action's main
// thread and may block (run the runtime's CLI with `reaper` and `spawner`, e.g. through
// shim/process/run_command.h). The Logger is thread-safe.
#pragma once

#include <string_view>

#include "shim/process/call_deadline.h"
#include "shim/service_context.h"

namespace shim {

class Clock;
class Logger;
class Reaper;
class Spawner;

struct ActionContext {
  // "delete" or "info".
  std::string_view action;
  // Who containerd says this is: -namespace, -id, the bundle (-bundle, else the cwd),
  // -address, TTRPC_ADDRESS, -debug. -info carries no task: ns and id may be empty.
  ShimIdentity identity;
  // logrus lines on stderr, which containerd logs ("cleanup warnings" for `delete`);
  // debug lines only with -debug.
  Logger& logger;
  const Clock& clock;
  // A reaper and a spawner for this action's children (a runtime CLI), reaped on a
  // thread of the action's own: Reaper::spawn_claimed, then ExitFuture::wait.
  Reaper& reaper;
  Spawner& spawner;
  // When the action must be done, on the steady clock (nullopt: unbounded, as -info).
  // containerd kills `delete` 5 s after starting it (core/runtime/v2/shim.go
  // cleanupAfterDeadShim, cleanupTimeout) and then leaks the bundle; libshim sets this 3 s
  // after the action began, leaving the rest for the unmount and the answer, and makes it
  // the thread's call deadline around Manager::stop, so a runtime command run through
  // shim/process/run_command.h (a CliClient's) is killed at it (shim/process/call_deadline.h).
  CallDeadline deadline;
};

}  // namespace shim
