// The process tier: what a runtime vendor writes to get a complete containerd shim.
//
// A Runtime makes one Instance per container; an Instance creates, starts, signals and
// deletes that container's processes with plain synchronous code. libshim serves the
// task API on top (shim/runtime_manager.h): the task state machine with containerd's
// error texts, init and exec bookkeeping, Wait, every task event in containerd's order,
// stdio (FIFOs, file://, binary:// loggers, terminals), rootfs mounts, exit matching by
// pid, cgroup metrics and OOM events, Pids, Connect, Shutdown, several containers per
// shim, and the `delete` action.
//
// Threading: libshim calls every method below on a thread of its work pool (never on
// the event loop), so they may block, e.g. on a runtime CLI. Calls that change a
// container (create, start, kill, pause, resume, update, checkpoint, remove) run one at
// a time per container, in the order containerd made them, as the Go shim's per-process
// lock orders them; exec, delete_exec, stats and pids may run alongside them. Instances
// of different containers run in parallel, up to the pool size.
//
// Exceptions: any method below may throw. libshim catches it at the call: the RPC fails
// with code Internal and the text "<Class>::<method> threw: <what()>" (a shim::StatusError
// answers its own status instead), the shim's log says so, and the task goes on as after
// any failed call: a Create can be tried again, a task that was being paused is running
// again, the container's next queued call runs, and a shim left with no container ends
// at Shutdown. Only a destructor must not throw (C++ ends the process then).
//
// Processes: the pids an Instance reports must be children of the shim (or reparented
// to it: the shim is a child subreaper), so libshim's reaper sees their exits. Start
// runtime CLIs with Reaper::spawn_claimed() (their exits are then not container exits),
// container processes with the Spawner or let the runtime fork them. A runtime whose
// processes live elsewhere (a VM's guest) answers ExitSource::kInstance and reports
// their exits itself through ContainerConfig::events (shim/instance_events.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/instance_events.h"
#include "shim/pb/any.pb.h"
#include "shim/status.h"

namespace shim {

struct ServiceContext;

// A process's standard streams as the runtime hands them on: fds 0-2 ready for its
// process (pipes or files; -1 means /dev/null), or, for a terminal, the socket where the
// runtime sends the pty master (SCM_RIGHTS), as runc's --console-socket does. libshim
// owns the fds: they stay open until the call that received them returned.
struct ProcessStdio {
  int stdin = -1;              // the process's stdin; -1: /dev/null
  int stdout = -1;             // the process's stdout; -1: /dev/null
  int stderr = -1;             // the process's stderr; -1: /dev/null
  std::string console_socket;  // set exactly when the process has a terminal

  // Whether the process has a terminal (its stdio goes through the pty).
  bool terminal() const { return !console_socket.empty(); }
};

// A container as Create describes it.
struct ContainerConfig {
  std::string id;      // container (task) id
  std::string bundle;  // the bundle directory (config.json, rootfs)
  // <bundle>/rootfs when Create carried mounts (libshim mounted them there and unmounts
  // them after remove()); empty when the spec's root is used as it is.
  std::string rootfs;
  // The bundle's config.json; empty when it is missing or not a JSON object (the
  // runtime then reports its own error, as it would without libshim).
  boost::json::object spec;
  // The runtime options containerd sent, if any (type_url as sent).
  std::optional<pb::Any> options;
  // Create from this checkpoint image: start() restores instead of starting.
  std::string checkpoint;
  std::string parent_checkpoint;  // CreateTaskRequest.parent_checkpoint
  bool terminal = false;          // the init has a terminal (CreateTaskRequest.terminal)
  // Where an Instance of ExitSource::kInstance reports its processes' exits and OOMs;
  // set by libshim before Runtime::open(), never null there.
  std::shared_ptr<InstanceEvents> events;
  // Call right before a runtime CLI moves a process into the container's cgroup through
  // cgroup.procs (libshim's CliInstance does before `runc create`, `runc restore` and
  // `runc exec`). From any thread; it never blocks: it starts a no-op migration on the
  // pool. The kernel's global threadgroup lock makes the first migration after a quiet
  // spell wait for an RCU grace period (7-15 ms measured), which then passes while the
  // CLI starts. Processes that join through the Spawner (SpawnRequest::cgroup_procs)
  // need none on cgroup v1, where they move without that lock: the no-op migration
  // would only hold the kernel's cgroup mutex through that wait. (On v2 they write
  // cgroup.procs and may wait; the task tier does not warm for them.) Set by libshim;
  // may be empty in a config it did not make.
  std::function<void()> warm_cgroup_migration;
};

// Who tells libshim that a container's process ended.
enum class ExitSource {
  // libshim's reaper: the processes are the shim's children (or reparented to it).
  kReaper,
  // The Instance, through ContainerConfig::events: its pids are not host pids (a guest's),
  // so libshim opens no pidfd, loads no cgroup and watches no OOM for them, and signals
  // and queries them only through the Instance (kill, kill_exec, stats, pids).
  kInstance,
};

// An exec process, as Exec described it and Start started it.
struct ExecConfig {
  std::string exec_id;  // ExecProcessRequest.exec_id
  std::string spec;     // OCI Process JSON, "terminal" set to the request's value
  ProcessStdio stdio;   // its stdio, made by libshim
};

// A checkpoint as CheckpointTask asked for it.
struct CheckpointConfig {
  std::string path;                // where the image goes (CheckpointTaskRequest.path)
  std::optional<pb::Any> options;  // the runtime's checkpoint options, if sent (type_url as sent)
};

// Who owns the pipes libshim makes for a process's stdio (runc's IoUid/IoGid options);
// -1: the shim's own uid or gid.
struct StdioOwner {
  int uid = -1;  // owner uid of the stdio pipes
  int gid = -1;  // owner gid of the stdio pipes
};

// One container: its init and execs, created and driven by the runtime.
class Instance {
 public:
  virtual ~Instance() = default;

  // Asked before libshim makes the stdio of the init and of each exec. Default: the shim.
  virtual StdioOwner stdio_owner() const { return {}; }
  // Asked once, after Runtime::open(). Default: kReaper.
  virtual ExitSource exit_source() const { return ExitSource::kReaper; }

  // Creates the init process with `stdio`, not started yet, and sets *pid when the
  // process exists now (as after `runc create`); leave it 0 when the process only exists
  // after start(). A container created from a checkpoint runs nothing here: keep
  // `stdio`, whose fds stay open until start() returned.
  virtual Status create(const ProcessStdio& stdio, std::uint32_t* pid) = 0;
  // Starts the init. *pid holds create()'s pid; set it when start() made the process.
  virtual Status start(std::uint32_t* pid) = 0;
  // Starts exec process `exec` of the running (or created) container.
  virtual Status exec(const ExecConfig& exec, std::uint32_t* pid) = 0;
  // Exec `exec_id` was deleted (it had stopped, or never started).
  virtual Status delete_exec(const std::string& exec_id);
  // Signals the init, or with `all` every process of the container. Unimplemented (the
  // default): libshim signals the init through its pidfd and refuses `all` unless the
  // container has its own pid namespace (the init's death then ends the rest).
  virtual Status kill(int signal, bool all);
  // Signals exec `exec_id`. Unimplemented (the default): libshim signals it through its
  // pidfd, as containerd's runc shim does; an Instance of ExitSource::kInstance must
  // implement it. Runs alongside the container's other calls.
  virtual Status kill_exec(const std::string& exec_id, int signal);
  // The terminal of the init (`exec_id` empty) or of an exec was resized to `width` x
  // `height` characters (ResizePty), after libshim resized the console it copies. Asked
  // only of an Instance of ExitSource::kInstance, whose process's own terminal is
  // elsewhere (a guest's pty); Unimplemented (the default): nothing more to do.
  virtual Status resize_terminal(const std::string& exec_id, unsigned width, unsigned height);
  // Deletes the container once its init stopped (or was never started). Afterwards
  // libshim unmounts the rootfs it mounted.
  virtual Status remove() = 0;

  // Optional; the defaults answer Unimplemented, which containerd reports as such.
  virtual Status pause();
  virtual Status resume();
  virtual Status update(std::string_view resources_json);  // OCI LinuxResources
  virtual Status checkpoint(const CheckpointConfig& config);
  // Unimplemented (the default): libshim answers from the init's cgroup (cgroup v1 or v2
  // metrics, as containerd's runc shim does).
  virtual Status stats(pb::Any* metrics);
  // The container's pids. Unimplemented (the default): libshim reads the init's cgroup.
  virtual Status pids(std::vector<std::uint32_t>* pids);

  // Live upgrade (shim/live_upgrade.h): what Runtime::reopen() needs, besides the
  // ContainerConfig, to make this Instance again in the next program; the container's
  // processes keep running meanwhile. Called on the event loop while the shim is paused
  // (no other call of this Instance runs): keep it short. Unimplemented (the default):
  // the shim refuses live upgrades while it has this container.
  virtual Status save_for_upgrade(boost::json::object* state);
};

// A vendor's runtime: opens an Instance per container (one Runtime per shim daemon).
class Runtime {
 public:
  virtual ~Runtime() = default;

  // Checks `config` (runtime options, bundle files) and makes the container's Instance;
  // no process runs yet. An error reaches containerd as it is. `config` outlives the
  // Instance; `config.rootfs` is mounted only after open() returned. Creates of
  // different containers may call open() at the same time.
  virtual Status open(const ContainerConfig& config, std::unique_ptr<Instance>* instance) = 0;

  // Live upgrade, in the new program: the Instance of a container the old program ran
  // (its processes are running, or exited), from its config and what its
  // Instance::save_for_upgrade() wrote (an older or newer build of this shim may have
  // written it). Nothing is mounted or written again. Called on the main thread before the
  // shim serves. Unimplemented (the default), or any error: the old program is brought
  // back and the upgrade fails with this status.
  virtual Status reopen(const ContainerConfig& config, const boost::json::object& saved,
                        std::unique_ptr<Instance>* instance);
};

}  // namespace shim
