// RuntimeTaskService: the task API served over a Runtime (shim/runtime.h), with the Go
// runc shim's semantics, status codes and error texts.
//
// Threading: every RPC runs on the shim's event loop and all task state lives there, so
// nothing is locked. Each Instance call runs on the WorkPool (those that change the
// container through the container's SerialOps); its result comes back to the loop, which
// updates the state and replies. A slow runtime call thus never delays State, Wait or
// another container's calls.
//
// The RPCs live in three files: runtime_task_service.cpp (lookups, exits, State, Wait,
// Kill, Pids, Stats, CloseIO, Pause, Resume, Update, Checkpoint, ResizePty, Connect,
// Shutdown), runtime_task_create.cpp (Create, Start of init) and
// runtime_task_exec.cpp (Exec, Start of an exec, Delete).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include <boost/json/value.hpp>

#include "linux/cgroup_warmer.h"
#include "shim/events/lifecycle_events.h"
#include "shim/linux/oom_watcher.h"
#include "shim/process/subscription.h"
#include "shim/process/work_pool.h"
#include "shim/runtime.h"
#include "shim/service_context.h"
#include "shim/task_service.h"
#include "task/reported_events.h"
#include "task/task_records.h"

namespace shim {

class RuntimeTaskService final : public TaskService, public UpgradeParticipant {
 public:
  RuntimeTaskService(ServiceContext& context, std::unique_ptr<Runtime> runtime);
  ~RuntimeTaskService() override;

  void create(const CallInfo&, task::CreateTaskRequest request,
              Reply<task::CreateTaskResponse> reply) override;
  void start(const CallInfo&, task::StartRequest request,
             Reply<task::StartResponse> reply) override;
  void remove(const CallInfo&, task::DeleteRequest request,
              Reply<task::DeleteResponse> reply) override;
  void exec(const CallInfo&, task::ExecProcessRequest request, Reply<Empty> reply) override;
  void state(const CallInfo&, task::StateRequest request,
             Reply<task::StateResponse> reply) override;
  void wait(const CallInfo&, task::WaitRequest request, Reply<task::WaitResponse> reply) override;
  void kill(const CallInfo&, task::KillRequest request, Reply<Empty> reply) override;
  void pids(const CallInfo&, task::PidsRequest request, Reply<task::PidsResponse> reply) override;
  void stats(const CallInfo&, task::StatsRequest request,
             Reply<task::StatsResponse> reply) override;
  void close_io(const CallInfo&, task::CloseIORequest request, Reply<Empty> reply) override;
  void pause(const CallInfo&, task::PauseRequest request, Reply<Empty> reply) override;
  void resume(const CallInfo&, task::ResumeRequest request, Reply<Empty> reply) override;
  void update(const CallInfo&, task::UpdateTaskRequest request, Reply<Empty> reply) override;
  void checkpoint(const CallInfo&, task::CheckpointTaskRequest request,
                  Reply<Empty> reply) override;
  void resize_pty(const CallInfo&, task::ResizePtyRequest request, Reply<Empty> reply) override;
  void connect(const CallInfo&, task::ConnectRequest request,
               Reply<task::ConnectResponse> reply) override;
  void shutdown(const CallInfo&, task::ShutdownRequest request, Reply<Empty> reply) override;

  // Live upgrade (runtime_task_upgrade.cpp): containers, their processes and stdio copies,
  // binary:// loggers included.
  UpgradeParticipant* upgrade_participant() override { return this; }
  std::string_view upgrade_key() const override { return "tasks"; }
  Status ready_for_upgrade() override;
  Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds) override;
  Status restore_after_upgrade(const boost::json::object& state) override;
  void upgrade_aborted() override;

  // The name of this service's keeper in ShutdownControl.
  static constexpr std::string_view kTasksKeeper = "tasks";

 private:
  struct CreateResult;

  // Why the containers keep the shim ("" if they do not): the keeper above.
  std::string why_kept() const;

  // Container `id`, or the Go shim's NotFound "container not created: not found".
  Status find(const std::string& id, TaskContainer** container);
  Status find(const std::string& id, const std::string& exec_id, TaskContainer** container,
              TaskProcess** process);

  // Runs `work` (returning Status, or a struct with a `status` member) on the pool after
  // the container's earlier ops, then `done(result)` on the loop.
  template <class Work, class Done>
  void serial(TaskContainer& container, Work work, Done done);

  CreateResult create_on_pool(const task::CreateTaskRequest& request, std::uint32_t pid_domain);
  void finish_create(const task::CreateTaskRequest& request, CreateResult result,
                     Reply<task::CreateTaskResponse> reply);
  void start_init(TaskContainer& container, Reply<task::StartResponse> reply);
  void start_exec(TaskContainer& container, TaskProcess& process, Reply<task::StartResponse> reply);
  void delete_init(TaskContainer& container, Reply<task::DeleteResponse> reply);
  void finish_delete_init(const std::string& id, const Status& status,
                          Reply<task::DeleteResponse> reply);
  void delete_exec(TaskContainer& container, TaskProcess& process,
                   Reply<task::DeleteResponse> reply);
  void before_delete(const std::string& id, const std::string& exec_id, std::function<void()> next);
  void after_exit_published(TaskProcess& process, std::function<void()> next);
  // Runs `next` once the binary:// logger of a deleted process's `io` has exited (at once
  // without one), as Go's Delete waits for it; counted in stopping_loggers_.
  void after_logger_exit(std::unique_ptr<ProcessIO> io, std::function<void()> next);
  void watch_oom(const TaskContainer& container);
  Status restore_container(const boost::json::value& saved);
  Status restore_process_io(const InstanceHolder& holder, TaskProcess& process,
                            const boost::json::value& saved);

  void on_reaped(const ProcessRef& ref, const ProcessExit& exit);
  // Reports of an Instance of ExitSource::kInstance (task/reported_events.h).
  void on_reported_oom(std::uint32_t domain, const std::string& container_id);
  void kill_rest_of(TaskContainer& container, std::function<void()> done);
  void on_exit_published(const ProcessRef& ref, const ProcessExit& exit);

  ServiceContext& context_;
  std::unique_ptr<Runtime> runtime_;
  CgroupMigrationWarmer cgroup_warmer_;  // ContainerConfig::warm_cgroup_migration
  LifecycleEvents events_;
  OomWatcher oom_;
  Subscription exits_;
  std::shared_ptr<ReportedEventsSink> reported_;  // the Instances' reports, while we live
  std::uint32_t next_pid_domain_ = 1;             // for the next Create (loop)
  std::map<std::string, std::unique_ptr<TaskContainer>> containers_;
  std::map<std::string, LifecycleEvents::StartToken> creating_;  // Creates under way: their holds
  // Deletes answered once a logger exits: a live upgrade waits for them (their process
  // is no longer a record it could carry).
  std::size_t stopping_loggers_ = 0;
};

template <class Work, class Done>
void RuntimeTaskService::serial(TaskContainer& container, Work work, Done done) {
  using Result = std::invoke_result_t<Work&>;
  // The op may launch after the handler returned: it keeps the call's deadline, and a
  // deadline that passed while it waited fails the runtime call at once, as in Go.
  container.ops->enqueue([this, id = container.id, holder = container.holder,
                          work = std::move(work), done = std::move(done),
                          deadline =
                              current_call_deadline()](SerialOps::Finished finished) mutable {
    CallDeadlineScope scope(deadline);
    // An op queued behind the container's Delete finds the container gone.
    TaskContainer* current = nullptr;
    if (!find(id, &current).ok() || current->holder != holder) {
      done(result_with_status<Result>(not_found("container not created")));
      return finished();
    }
    post_and_reply(context_.pool, context_.executor, std::move(work),
                   [done = std::move(done), finished = std::move(finished)](Result result) mutable {
                     done(std::move(result));
                     finished();
                   });
  });
}

}  // namespace shim
