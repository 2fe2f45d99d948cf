// What the process tier's task service keeps per container and per process. Loop thread
// only, except InstanceHolder, which pool jobs share.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shim/linux/cgroup.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/process/exit.h"
#include "shim/process/process_handle.h"
#include "shim/runtime.h"
#include "shim/service_context.h"
#include "shim/stdio/process_io.h"
#include "shim/ttrpc/typed.h"
#include "task/guarded_instance.h"
#include "task/serial_ops.h"
#include "task/task_state.h"

namespace shim {

// The runtime's Instance, guarded, with the config it was opened with (which must
// outlive it). Shared by the container record and the pool jobs that call it.
struct InstanceHolder {
  ContainerConfig config;
  GuardedInstance instance;
  ExitSource exit_source = ExitSource::kReaper;  // as the Instance answered after open()
  std::uint32_t pid_domain = 0;  // LifecycleEvents' domain of its pids (0: the host's)

  // Whether its pids are host pids libshim may look up (pidfd, cgroup, OOM watch).
  bool host_pids() const { return exit_source == ExitSource::kReaper; }
};

struct TaskProcess {
  std::string id;       // the container id for init, the exec id for an exec
  std::string exec_id;  // empty for init
  StdioSpec stdio;
  std::string spec_json;  // exec: the OCI Process JSON for the runtime
  ProcessState state = ProcessState::kCreated;
  bool busy = false;      // a start or delete is under way
  bool deleting = false;  // init: a Delete is under way; later ones wait for its outcome
  std::vector<ttrpc::Reply<containerd::task::v2::DeleteResponse>> later_deletes;
  std::uint32_t pid = 0;
  std::optional<ProcessExit> exit;
  bool exit_published = false;
  std::unique_ptr<ProcessIO> io;
  ProcessHandle handle;  // pidfd: execs (and init by default) are signalled through it
  std::vector<ttrpc::Reply<containerd::task::v2::WaitResponse>> waiters;
  // Deletes waiting for the TaskExit to go out (run by on_exit_published).
  std::vector<std::function<void()>> exit_published_waiters;

  bool is_init() const { return exec_id.empty(); }
};

struct TaskContainer {
  std::string id;
  std::string bundle;
  std::shared_ptr<InstanceHolder> holder;
  std::shared_ptr<SerialOps> ops = std::make_shared<SerialOps>();
  std::optional<CgroupPaths> cgroup;  // the init's, loaded once its pid is known
  bool private_pid_namespace = true;
  // Created from a checkpoint (Go's "created checkpoint" state): nothing runs until
  // Start restores it; its IO keeps the runtime's ends open until then.
  bool restore_pending = false;
  TaskProcess init;
  std::map<std::string, std::unique_ptr<TaskProcess>> execs;

  // The process by exec id ("" = init); nullptr if none.
  // Whether an exec is running or starting: the init's TaskExit waits for its exit.
  bool has_live_exec() const {
    for (const auto& [exec_id, exec] : execs) {
      if (!exec->exit && (exec->pid != 0 || exec->busy)) return true;
    }
    return false;
  }
  TaskProcess* process(const std::string& exec_id) {
    if (exec_id.empty()) return &init;
    auto it = execs.find(exec_id);
    return it == execs.end() ? nullptr : it->second.get();
  }
};

// Whether an OCI spec gives the container its own pid namespace (a "pid" namespace
// entry without a path). Without one the rest of the container is killed when init
// exits, as the Go shim does (runc.ShouldKillAllOnExit). An empty spec (unreadable
// config.json) counts as private: nothing extra is killed.
bool has_private_pid_namespace(const boost::json::object& spec);

// What the runtime gets of `io`: its ends of the pipes, or the console socket.
ProcessStdio runtime_stdio(const ProcessIO& io);

// The exec's OCI Process JSON with `terminal` forced to the request's value (Go does so).
// InvalidArgument unless the spec is a JSON object whose numbers all fit a double.
Status exec_spec(const containerd::task::v2::ExecProcessRequest& request, std::string* spec_json);

// How the stdio of a process of `holder`'s container is set up: the output buffer is
// context.output_buffer with the container's io.libshim.output.* annotations applied,
// spilling into its bundle. Any thread.
Status process_io_options(ServiceContext& context, const InstanceHolder& holder,
                          const std::string& process_id, ProcessIOOptions* options);

// The stdio of a process of `instance` (owner from Instance::stdio_owner(), options from
// process_io_options()). Any thread.
Status make_process_io(ServiceContext& context, const InstanceHolder& holder,
                       const StdioSpec& stdio, const std::string& process_id,
                       std::unique_ptr<ProcessIO>* io);

}  // namespace shim
