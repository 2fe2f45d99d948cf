// TaskService: the 17 task RPCs a shim serves, the second tier for shims that own the
// protocol (e.g. a VM shim forwarding to its guest agent). Most runtimes implement the
// process tier instead (shim/runtime.h), for which libshim serves this interface.
// One implementation answers both containerd.task.v2.Task (containerd 1.6/1.7,
// version-2 shims under 2.x) and containerd.task.v3.Task (2.x): their messages are
// identical on the wire.
//
// Threading: every method is called on the shim's event loop thread, one call at a
// time, and must not block: run blocking work on ServiceContext::pool and answer from
// its result (post_and_reply in shim/process/work_pool.h). A method answers through its
// Reply, now or later, from any thread (a Wait may hold its Reply for hours without
// holding a thread). Every method has a default that answers Unimplemented "not
// implemented", so a plug-in overrides only what it supports.
#pragma once

#include <string_view>

#include "shim/live_upgrade.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/empty.pb.h"
#include "shim/ttrpc/call.h"
#include "shim/ttrpc/router.h"
#include "shim/ttrpc/typed.h"

namespace shim {

namespace task = ::containerd::task::v2;
// google.protobuf.Empty's wire shape under libshim's own package (shim/pb/empty.proto).
using Empty = ::shim::pb::Empty;
using ttrpc::CallInfo;
using ttrpc::Reply;

// The service names containerd calls: task API v2 (1.6, 1.7) and v3 (2.x).
inline constexpr std::string_view kTaskServiceV2 = "containerd.task.v2.Task";
inline constexpr std::string_view kTaskServiceV3 = "containerd.task.v3.Task";

// The task API (see the file's description); each default answers Unimplemented.
class TaskService {
 public:
  virtual ~TaskService() = default;

  // State: the status, pid, stdio and exit of the init or of an exec.
  virtual void state(const CallInfo& call, task::StateRequest request,
                     Reply<task::StateResponse> reply);
  // Create: the container, its init created but not started; answers the init's pid.
  virtual void create(const CallInfo& call, task::CreateTaskRequest request,
                      Reply<task::CreateTaskResponse> reply);
  // Start: the init (empty exec_id) or an exec; answers its pid.
  virtual void start(const CallInfo& call, task::StartRequest request,
                     Reply<task::StartResponse> reply);
  // Delete: a stopped init (the container) or exec; answers its exit.
  virtual void remove(const CallInfo& call, task::DeleteRequest request,  // RPC "Delete"
                      Reply<task::DeleteResponse> reply);
  // Pids: the container's processes.
  virtual void pids(const CallInfo& call, task::PidsRequest request,
                    Reply<task::PidsResponse> reply);
  // Pause and Resume: freeze and thaw the container.
  virtual void pause(const CallInfo& call, task::PauseRequest request, Reply<Empty> reply);
  virtual void resume(const CallInfo& call, task::ResumeRequest request, Reply<Empty> reply);
  // Checkpoint: the container's image (CRIU) to request.path.
  virtual void checkpoint(const CallInfo& call, task::CheckpointTaskRequest request,
                          Reply<Empty> reply);
  // Kill: a signal to the init or an exec, or with `all` to every process.
  virtual void kill(const CallInfo& call, task::KillRequest request, Reply<Empty> reply);
  // Exec: adds exec process exec_id (started by a later Start).
  virtual void exec(const CallInfo& call, task::ExecProcessRequest request, Reply<Empty> reply);
  // ResizePty: the terminal size of the init or an exec.
  virtual void resize_pty(const CallInfo& call, task::ResizePtyRequest request, Reply<Empty> reply);
  // CloseIO: closes the process's stdin.
  virtual void close_io(const CallInfo& call, task::CloseIORequest request, Reply<Empty> reply);
  // Update: the container's resources (OCI LinuxResources in an Any).
  virtual void update(const CallInfo& call, task::UpdateTaskRequest request, Reply<Empty> reply);
  // Wait: answers once the init or the exec has exited, with its exit.
  virtual void wait(const CallInfo& call, task::WaitRequest request,
                    Reply<task::WaitResponse> reply);
  // Stats: the container's metrics (cgroup v1 or v2 Metrics in an Any).
  virtual void stats(const CallInfo& call, task::StatsRequest request,
                     Reply<task::StatsResponse> reply);
  // Connect: the shim's and the init's pids, the task API version.
  virtual void connect(const CallInfo& call, task::ConnectRequest request,
                       Reply<task::ConnectResponse> reply);
  // Shutdown: containerd sends one after every task it deletes (from 2.4 on also for a
  // sandbox's tasks), so a shim serving several containers gets many. Answer OK and call
  // ServiceContext::shutdown.shutdown_if_unused() with a keeper set for your containers
  // (shim/shutdown_control.h): the shim then ends only when nothing is left. The
  // default answers Unimplemented, and containerd then leaves the shim running.
  virtual void shutdown(const CallInfo& call, task::ShutdownRequest request, Reply<Empty> reply);

  // Live upgrade (shim/live_upgrade.h): the participant that saves and restores this
  // service's state, or nullptr (the default): the shim then refuses live upgrades.
  virtual UpgradeParticipant* upgrade_participant() { return nullptr; }
};

// Registers `service` on `router` under both task API names (v2 and v3). The service
// must outlive the router's server.
void register_task_service(ttrpc::Router& router, TaskService& service);

}  // namespace shim
