// The state machine of a container's processes as containerd's runc shim runs it
// (pkg/process/init_state.go and exec_state.go in containerd 1.6, cmd/containerd-shim-
// runc-v2/process/ in 2.x): which operation each state allows, and the exact error it
// gives otherwise. containerd and CRI match on these texts.
#pragma once

#include "shim/pb/containerd/task_types.pb.h"
#include "shim/status.h"

namespace shim {

enum class ProcessState { kCreated, kRunning, kPausing, kPaused, kStopped };

const char* state_name(ProcessState state);
containerd::v1::types::Status state_status(ProcessState state);

// What an RPC wants to do to a process; checked against its state.
enum class Operation { kStart, kDelete, kKill, kPause, kResume, kExec, kUpdate, kCheckpoint };

// OK, or the error the Go shim gives for `op` in `state` (init or exec process).
Status check_transition(ProcessState state, Operation op, bool is_init);

}  // namespace shim
