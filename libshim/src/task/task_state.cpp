#include "task/task_state.h"

namespace shim {

const char* state_name(ProcessState state) {
  switch (state) {
    case ProcessState::kCreated: return "created";
    case ProcessState::kRunning: return "running";
    case ProcessState::kPausing: return "pausing";
    case ProcessState::kPaused: return "paused";
    case ProcessState::kStopped: return "stopped";
  }
  return "unknown";
}

containerd::v1::types::Status state_status(ProcessState state) {
  switch (state) {
    case ProcessState::kCreated: return containerd::v1::types::CREATED;
    case ProcessState::kRunning: return containerd::v1::types::RUNNING;
    case ProcessState::kPausing: return containerd::v1::types::PAUSING;
    case ProcessState::kPaused: return containerd::v1::types::PAUSED;
    case ProcessState::kStopped: return containerd::v1::types::STOPPED;
  }
  return containerd::v1::types::UNKNOWN;
}

namespace {

Status plain(const char* message) { return unknown(message); }

Status init_transition(ProcessState state, Operation op) {
  using S = ProcessState;
  switch (op) {
    case Operation::kStart:
      if (state == S::kCreated) return {};
      if (state == S::kRunning || state == S::kPausing) return plain("cannot start a running process");
      if (state == S::kPaused) return plain("cannot start a paused process");
      return plain("cannot start a stopped process");
    case Operation::kDelete:
      if (state == S::kCreated || state == S::kStopped) return {};
      if (state == S::kPaused) return plain("cannot delete a paused process");
      return plain("cannot delete a running process");
    case Operation::kKill:
      return {};  // runc decides (a stopped container answers "not running")
    case Operation::kPause:
      if (state == S::kRunning) return {};
      if (state == S::kCreated) return plain("cannot pause task in created state");
      if (state == S::kPaused || state == S::kPausing) return plain("cannot pause a paused container");
      return plain("cannot pause a stopped container");
    case Operation::kResume:
      if (state == S::kPaused) return {};
      if (state == S::kCreated) return plain("cannot resume task in created state");
      if (state == S::kRunning || state == S::kPausing) return plain("cannot resume a running process");
      return plain("cannot resume a stopped container");
    case Operation::kExec:
      // Go allows exec into a created (not yet started) init; runc supports it. Only a
      // checkpoint-created init refuses (checked by the caller, which knows).
      if (state == S::kRunning || state == S::kCreated) return {};
      if (state == S::kPaused || state == S::kPausing) return plain("cannot exec in a paused state");
      return plain("cannot exec in a stopped state");
    case Operation::kUpdate:
      if (state == S::kStopped) return plain("cannot update a stopped container");
      return {};
    case Operation::kCheckpoint:
      // Pausing: Go's Checkpoint waits for the pause call to finish, then checkpoints.
      if (state == S::kRunning || state == S::kPaused || state == S::kPausing) return {};
      if (state == S::kCreated) return plain("cannot checkpoint a task in created state");
      return plain("cannot checkpoint a stopped container");
  }
  return {};
}

Status exec_transition(ProcessState state, Operation op) {
  using S = ProcessState;
  switch (op) {
    case Operation::kStart:
      if (state == S::kCreated) return {};
      if (state == S::kStopped) return plain("cannot start a stopped process");
      return plain("cannot start a running process");
    case Operation::kDelete:
      if (state == S::kCreated || state == S::kStopped) return {};
      return plain("cannot delete a running process");
    case Operation::kKill:
      if (state == S::kCreated) return failed_precondition("process not created");
      if (state == S::kStopped) return not_found("process already finished");
      return {};
    default:
      return {};
  }
}

}  // namespace

Status check_transition(ProcessState state, Operation op, bool is_init) {
  return is_init ? init_transition(state, op) : exec_transition(state, op);
}

}  // namespace shim
