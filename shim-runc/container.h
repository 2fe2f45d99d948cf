// The runc shim's model of its containers and processes, with the Go shim's state
// machine: which operation each state allows and the exact error it gives otherwise
// (containerd pkg/process/*_state.go). Everything here lives on the shim's event loop.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shim/pb/containerd/task_v2.pb.h"
#include "shim-runc/cgroup.h"
#include "shim-runc/options.h"
#include "shim-runc/process_io.h"
#include "shim-runc/runc_client.h"
#include "shim/exit.h"
#include "shim/process_handle.h"
#include "shim/status.h"
#include "shim/timestamp.h"
#include "shim/ttrpc/typed.h"

namespace runc_shim {

enum class ProcessState { kCreated, kRunning, kPausing, kPaused, kStopped };

const char* state_name(ProcessState state);
containerd::v1::types::Status state_status(ProcessState state);

// What an RPC wants to do to a process; checked against its state.
enum class Operation { kStart, kDelete, kKill, kPause, kResume, kExec, kUpdate, kCheckpoint };

// OK, or the error the Go shim gives for `op` in `state` (init or exec process).
shim::Status check_transition(ProcessState state, Operation op, bool is_init);

struct Process {
  std::string id;       // container id for init, exec id for an exec
  std::string exec_id;  // empty for init
  StdioSpec stdio;
  std::string spec_json;  // exec: the OCI Process JSON given to runc exec
  ProcessState state = ProcessState::kCreated;
  bool busy = false;      // a start or delete is under way
  std::uint32_t pid = 0;
  std::optional<shim::ProcessExit> exit;
  bool exit_published = false;
  std::unique_ptr<ProcessIO> io;
  shim::ProcessHandle handle;  // execs are signalled directly, through their pidfd
  std::vector<shim::ttrpc::Reply<containerd::task::v2::WaitResponse>> waiters;

  bool is_init() const { return exec_id.empty(); }
};

struct Container {
  Container(std::string id_, std::string bundle_, RuncOptions options_, RuncClient runc_)
      : id(std::move(id_)), bundle(std::move(bundle_)), options(std::move(options_)),
        runc(std::move(runc_)) {}

  std::string id;
  std::string bundle;
  std::string rootfs;  // mounted by us (undone on delete); empty when the spec's root is used
  RuncOptions options;
  RuncClient runc;     // shared by pool jobs: it holds no per-call state
  bool private_pid_namespace = true;
  std::optional<CgroupPaths> cgroup;  // loaded from the init pid at Create, for Stats and OOM
  Process init;
  std::map<std::string, std::unique_ptr<Process>> execs;
  // Set by a Create with `checkpoint` (Go's "created checkpoint" state): no runc create
  // ran, Start runs `runc restore` with these instead of `runc start`. Reset once the
  // restore succeeded. The init reports "created" meanwhile.
  std::optional<RestoreArgs> restore;

  // Process by exec id ("" = init); nullptr if there is none.
  Process* process(const std::string& exec_id);
};

using shim::exited_at;  // the Go zero time for "not exited", else the exit time

// Whether the OCI spec gives the container its own pid namespace (a "pid" namespace
// entry without a path). If not, the shim kills the container's other processes when
// init exits, as the Go shim does.
bool has_private_pid_namespace(std::string_view config_json);

}  // namespace runc_shim
