// The example runtime: each container is its OCI process run as a plain child of the
// shim, chrooted into the bundle's rootfs (no namespaces, no cgroups). It is the
// smallest honest runtime that lets containerd's whole task life cycle run:
//
//   Create  read config.json, open the stdio FIFOs, publish /tasks/create
//   Start   spawn `chroot <rootfs> <args>`, publish /tasks/start (LifecycleEvents keeps
//           the order even if the process dies at once)
//   Exec    the same for an extra process of a running container
//   Kill    signal the process through its pidfd
//   Wait    answered when the process's /tasks/exit has been published
//   Delete  forget the process, publish /tasks/delete
//
// Everything runs on the shim's event loop, so the service needs no locks; the only
// blocking call, the spawn, is short (vfork-style) and happens on the loop too.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fifo_readers.h"
#include "shim/events/lifecycle_events.h"
#include "shim/process/process_handle.h"
#include "shim/service_context.h"
#include "shim/process/subscription.h"
#include "shim/task_service.h"

namespace example {

namespace task = shim::task;

enum class ProcessState { kCreated, kRunning, kStopped };

struct Process {
  std::string id;            // container id for init, exec id for execs
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string stdin_path, stdout_path, stderr_path;
  ProcessState state = ProcessState::kCreated;
  std::uint32_t pid = 0;
  shim::ProcessHandle handle;
  std::optional<shim::ProcessExit> exit;
  std::vector<shim::Reply<task::WaitResponse>> waiters;
  FifoReaders output_readers;  // until the process is deleted
};

struct Container {
  std::string id;
  std::string bundle;
  std::string rootfs;
  Process init;
  std::map<std::string, Process> execs;
};

class ExampleService final : public shim::TaskService {
 public:
  explicit ExampleService(shim::ServiceContext& context);

  void create(const shim::CallInfo&, task::CreateTaskRequest request,
              shim::Reply<task::CreateTaskResponse> reply) override;
  void start(const shim::CallInfo&, task::StartRequest request,
             shim::Reply<task::StartResponse> reply) override;
  void exec(const shim::CallInfo&, task::ExecProcessRequest request,
            shim::Reply<shim::Empty> reply) override;
  void state(const shim::CallInfo&, task::StateRequest request,
             shim::Reply<task::StateResponse> reply) override;
  void wait(const shim::CallInfo&, task::WaitRequest request,
            shim::Reply<task::WaitResponse> reply) override;
  void kill(const shim::CallInfo&, task::KillRequest request,
            shim::Reply<shim::Empty> reply) override;
  void remove(const shim::CallInfo&, task::DeleteRequest request,
              shim::Reply<task::DeleteResponse> reply) override;
  void pids(const shim::CallInfo&, task::PidsRequest request,
            shim::Reply<task::PidsResponse> reply) override;
  void connect(const shim::CallInfo&, task::ConnectRequest request,
               shim::Reply<task::ConnectResponse> reply) override;
  void shutdown(const shim::CallInfo&, task::ShutdownRequest request,
                shim::Reply<shim::Empty> reply) override;

 private:
  shim::Status find(const std::string& id, const std::string& exec_id, Container** container,
                    Process** process);
  shim::Status spawn(Container& container, Process& process);
  void on_exit_published(const shim::ProcessRef& ref, const shim::ProcessExit& exit);

  shim::ServiceContext& context_;
  shim::LifecycleEvents events_;
  shim::Subscription exits_;
  std::map<std::string, std::unique_ptr<Container>> containers_;
};

}  // namespace example
