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

#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/empty.pb.h"
#include "shim/ttrpc/call.h"
#include "shim/ttrpc/router.h"
#include "shim/ttrpc/typed.h"

namespace shim {

namespace task = ::containerd::task::v2;
using Empty = ::shim::pb::Empty;
using ttrpc::CallInfo;
using ttrpc::Reply;

inline constexpr std::string_view kTaskServiceV2 = "containerd.task.v2.Task";
inline constexpr std::string_view kTaskServiceV3 = "containerd.task.v3.Task";

class TaskService {
 public:
  virtual ~TaskService() = default;

  virtual void state(const CallInfo& call, task::StateRequest request,
                     Reply<task::StateResponse> reply);
  virtual void create(const CallInfo& call, task::CreateTaskRequest request,
                      Reply<task::CreateTaskResponse> reply);
  virtual void start(const CallInfo& call, task::StartRequest request,
                     Reply<task::StartResponse> reply);
  virtual void remove(const CallInfo& call, task::DeleteRequest request,  // RPC "Delete"
                      Reply<task::DeleteResponse> reply);
  virtual void pids(const CallInfo& call, task::PidsRequest request,
                    Reply<task::PidsResponse> reply);
  virtual void pause(const CallInfo& call, task::PauseRequest request, Reply<Empty> reply);
  virtual void resume(const CallInfo& call, task::ResumeRequest request, Reply<Empty> reply);
  virtual void checkpoint(const CallInfo& call, task::CheckpointTaskRequest request,
                          Reply<Empty> reply);
  virtual void kill(const CallInfo& call, task::KillRequest request, Reply<Empty> reply);
  virtual void exec(const CallInfo& call, task::ExecProcessRequest request, Reply<Empty> reply);
  virtual void resize_pty(const CallInfo& call, task::ResizePtyRequest request,
                          Reply<Empty> reply);
  virtual void close_io(const CallInfo& call, task::CloseIORequest request, Reply<Empty> reply);
  virtual void update(const CallInfo& call, task::UpdateTaskRequest request, Reply<Empty> reply);
  virtual void wait(const CallInfo& call, task::WaitRequest request,
                    Reply<task::WaitResponse> reply);
  virtual void stats(const CallInfo& call, task::StatsRequest request,
                     Reply<task::StatsResponse> reply);
  virtual void connect(const CallInfo& call, task::ConnectRequest request,
                       Reply<task::ConnectResponse> reply);
  virtual void shutdown(const CallInfo& call, task::ShutdownRequest request, Reply<Empty> reply);
};

// Registers `service` on `router` under both task API names (v2 and v3). The service
// must outlive the router's server.
void register_task_service(ttrpc::Router& router, TaskService& service);

}  // namespace shim
