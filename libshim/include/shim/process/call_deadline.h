// The deadline of the task API call that the current thread works for: containerd's RPC
// context as ttrpc carries it (Request.timeout_nano). The Go shim runs runc with
// exec.CommandContext on the RPC's context, so a runc that hangs is killed when the
// call's deadline passes; libshim does the same: the task service sets the deadline
// around each handler (on the loop), post_and_reply and the per-container op queue carry
// it to the pool job, and run_and_capture kills the command it runs at that deadline.
// A call without a deadline (plain `ctr` sends none) bounds nothing, as in Go.
//
// Thread-local by necessity: Instance methods are plain synchronous calls with no
// context parameter, and the deadline has to reach the runtime CLI they start.
#pragma once

#include <chrono>
#include <optional>

namespace shim {

// A point on the steady clock, or nullopt for a call without a deadline.
using CallDeadline = std::optional<std::chrono::steady_clock::time_point>;

// The deadline set by the innermost CallDeadlineScope on this thread (nullopt: none).
CallDeadline current_call_deadline();

// Sets the thread's call deadline for its lifetime, then restores the previous one.
class CallDeadlineScope {
 public:
  // Makes `deadline` the thread's call deadline until this scope ends.
  explicit CallDeadlineScope(CallDeadline deadline);
  ~CallDeadlineScope();
  CallDeadlineScope(const CallDeadlineScope&) = delete;
  CallDeadlineScope& operator=(const CallDeadlineScope&) = delete;

 private:
  CallDeadline previous_;
};

}  // namespace shim
