// SandboxRecord: what the sandbox service knows of its one sandbox, on the loop. The
// state containerd reads is derived, never stored twice: READY while started and not
// exited, NOTREADY otherwise (before start, after stop or the sandbox's own exit).
//
// Threading: loop only. `sandbox` is shared with the pool work of the call under way (the
// SerialOps queue runs one at a time), which touches nothing else.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/guarded_sandbox.h"
#include "shim/pb/containerd/sandbox.pb.h"
#include "shim/sandbox.h"
#include "shim/ttrpc/typed.h"
#include "task/serial_ops.h"

namespace shim {

namespace sandbox_api = ::containerd::runtime::sandbox::v1;

struct SandboxRecord {
  using TimePoint = std::chrono::system_clock::time_point;

  std::string id;
  std::string bundle;
  std::string netns_path;
  // The plug-in's sandbox once CreateSandbox succeeded; null while it is under way. It
  // keeps the SandboxEvents it was made with alive.
  std::shared_ptr<GuardedSandbox> sandbox;
  // The vendor calls of this sandbox, one at a time in arrival order.
  std::shared_ptr<SerialOps> ops = std::make_shared<SerialOps>();
  std::optional<TimePoint> created_at;  // CreateSandbox succeeded
  std::optional<TimePoint> started_at;  // StartSandbox succeeded: the created_at containerd gets
  std::uint32_t pid = 0;
  std::optional<SandboxExit> exit;  // stopped, or ended by itself
  // Gone (ShutdownSandbox succeeded, or CreateSandbox failed): queued calls answer NotFound.
  bool removed = false;
  // SandboxEvents::exited() reports posted to the loop and not yet recorded (any thread
  // adds, the loop takes away): a live upgrade waits for them.
  std::atomic<int> reports_pending{0};
  // WaitSandbox calls held until `exit`; answered (and emptied) then.
  std::vector<ttrpc::Reply<sandbox_api::WaitSandboxResponse>> waiters;

  bool ready() const { return started_at.has_value() && !exit.has_value(); }

  // Records the first exit and answers every held WaitSandbox; false (and nothing
  // changes) if an exit was recorded already.
  bool mark_exited(const SandboxExit& ended);
  // Holds `reply` until the exit (answers it now if there is one). Replies whose client
  // went away are dropped here, so a client that waits and disconnects over and over
  // does not grow the list.
  void wait(ttrpc::Reply<sandbox_api::WaitSandboxResponse> reply);
};

// What WaitSandbox answers for `exit`.
sandbox_api::WaitSandboxResponse wait_response(const SandboxExit& exit);

}  // namespace shim
