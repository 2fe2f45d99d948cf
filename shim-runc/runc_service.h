// RuncService: the task API over runc (or any runc-compatible runtime), with the Go
// runc shim's semantics, status codes and error texts.
//
// Threading: every RPC runs on the shim's event loop and all container state lives
// there, so no locks are needed. Each runc invocation runs on the WorkPool; its result
// comes back to the loop, which updates the state and replies. A slow runc call thus
// never delays State, Wait or another container's calls (Go's PR #13483 class of bug).
#pragma once

#include <map>
#include <set>
#include <memory>
#include <string>

#include "shim-runc/container.h"
#include "shim-runc/oom_watcher.h"
#include "shim/lifecycle_events.h"
#include "shim/service_context.h"
#include "shim/subscription.h"
#include "shim/task_service.h"

namespace runc_shim {

namespace task = shim::task;
using shim::CallInfo;
using shim::Empty;
using shim::Reply;

class RuncService final : public shim::TaskService {
 public:
  explicit RuncService(shim::ServiceContext& context);
  ~RuncService() override;

  void create(const CallInfo&, task::CreateTaskRequest request,
              Reply<task::CreateTaskResponse> reply) override;
  void start(const CallInfo&, task::StartRequest request, Reply<task::StartResponse> reply) override;
  void remove(const CallInfo&, task::DeleteRequest request, Reply<task::DeleteResponse> reply) override;
  void exec(const CallInfo&, task::ExecProcessRequest request, Reply<Empty> reply) override;
  void state(const CallInfo&, task::StateRequest request, Reply<task::StateResponse> reply) override;
  void wait(const CallInfo&, task::WaitRequest request, Reply<task::WaitResponse> reply) override;
  void kill(const CallInfo&, task::KillRequest request, Reply<Empty> reply) override;
  void pids(const CallInfo&, task::PidsRequest request, Reply<task::PidsResponse> reply) override;
  void stats(const CallInfo&, task::StatsRequest request, Reply<task::StatsResponse> reply) override;
  void close_io(const CallInfo&, task::CloseIORequest request, Reply<Empty> reply) override;
  void pause(const CallInfo&, task::PauseRequest request, Reply<Empty> reply) override;
  void resume(const CallInfo&, task::ResumeRequest request, Reply<Empty> reply) override;
  void update(const CallInfo&, task::UpdateTaskRequest request, Reply<Empty> reply) override;
  // runc_service_terminal.cpp
  void resize_pty(const CallInfo&, task::ResizePtyRequest request, Reply<Empty> reply) override;
  // runc_service_checkpoint.cpp
  void checkpoint(const CallInfo&, task::CheckpointTaskRequest request, Reply<Empty> reply) override;
  void connect(const CallInfo&, task::ConnectRequest request,
               Reply<task::ConnectResponse> reply) override;
  void shutdown(const CallInfo&, task::ShutdownRequest request, Reply<Empty> reply) override;

 private:
  struct CreateResult;

  // Container `id`, or the Go shim's NotFound "container not created: not found".
  shim::Status find(const std::string& id, Container** container);
  shim::Status find(const std::string& id, const std::string& exec_id, Container** container,
                    Process** process);

  void finish_create(const task::CreateTaskRequest& request, const CreateResult& result,
                     Reply<task::CreateTaskResponse> reply);
  void start_init(Container& container, Reply<task::StartResponse> reply);
  // Start of a container created from a checkpoint: `runc restore` (runc_service_checkpoint.cpp).
  void start_restored(Container& container, Reply<task::StartResponse> reply);
  void start_exec(Container& container, Process& process, Reply<task::StartResponse> reply);
  void delete_init(Container& container, Reply<task::DeleteResponse> reply);
  void delete_exec(Container& container, Process& process, Reply<task::DeleteResponse> reply);

  void on_reaped(const shim::ProcessRef& ref, const shim::ProcessExit& exit);
  void on_exit_published(const shim::ProcessRef& ref, const shim::ProcessExit& exit);

  shim::ServiceContext& context_;
  shim::LifecycleEvents events_;
  OomWatcher oom_;
  shim::Subscription exits_;
  std::map<std::string, std::unique_ptr<Container>> containers_;
  struct PendingCreate {
    std::unique_ptr<Container> container;
    std::unique_ptr<ProcessIO> io;
    shim::LifecycleEvents::StartToken hold = 0;
  };
  std::map<std::string, PendingCreate> creating_;  // Creates under way, by id
};

}  // namespace runc_shim
