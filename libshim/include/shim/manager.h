// Manager: the runtime-specific half of the shim binary protocol. A vendor implements
// one Manager (plus a TaskService) and calls shim::run() from main():
//
//   int main(int argc, char** argv) {
//     MyManager manager;
//     return shim::run(argc, argv, manager);
//   }
//
// libshim parses flags/env/stdin, picks the action and does everything that is not
// runtime-specific; the Manager answers the few questions only the runtime can.
//
// Threading: every method runs on the main thread of the action or daemon it serves.
// Exceptions: a method may throw; libshim turns the exception into an error naming the
// method ("Manager::info threw: ..."): the action fails with it, a daemon whose task
// service cannot be made exits 1 and logs it (shim/runtime.h, "Exceptions").
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shim/action_context.h"
#include "shim/logger.h"
#include "shim/mount_capabilities.h"
#include "shim/pb/any.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "shim/process/reaper.h"
#include "shim/sandbox.h"
#include "shim/service_context.h"
#include "shim/status.h"
#include "shim/task_service.h"
#include "shim/ttrpc/router.h"

namespace shim {

// What the `start` action knows, whichever containerd version called it.
struct StartContext {
  std::string id;                        // task id being started
  std::string ns;                        // -namespace
  std::string bundle;                    // cwd of `start`
  std::string grpc_address;              // -address: containerd's gRPC socket
  std::string ttrpc_address;             // TTRPC_ADDRESS: where events go
  std::string socket_dir;                // BootstrapParams.socket_dir (2.3+) or /run/containerd/s
  bool debug = false;                    // -debug
  bool bootstrap_params = false;         // stdin was a 2.3+ BootstrapParams
  std::optional<shim::pb::Any> options;  // runtime options, if any were sent
};

// How `start` answers a containerd that sends no BootstrapParams: 1.6 - 2.2, and 2.3+
// for a shim whose name contains shim-runc-v1 or shim-runhcs-v1. Under 1.6 (told by the
// environment) the answer is always the plain address. 2.3+ callers that send
// BootstrapParams always get the protobuf BootstrapResult (version 3).
enum class LegacyStartAnswer {
  // "unix:///...": read as version 2, ttrpc, by every release (the default).
  kPlainAddress,
  // {"version":2,"address":...,"protocol":"ttrpc"}: accepted by 1.7 and 2.x.
  kJsonVersion2,
  // Version 3 (task API v3): 2.x only; containerd 1.7 fails the start on it.
  kJsonVersion3,
};

// How the `start` action launches the long-lived server. The library's defaults suit
// most runtimes; a Manager adjusts them in daemon_options().
struct DaemonOptions {
  // OCI annotations that name the shim group, first present wins; else the task id.
  std::vector<std::string> group_annotations = {"io.containerd.runc.v2.group",
                                                "io.kubernetes.cri.sandbox-id"};
  std::string cgroup;            // move the daemon into this cgroup (e.g. runc's ShimCgroup)
  bool adjust_oom_score = true;  // containerd's oom_score_adj + 1
  // The answer's form for callers without BootstrapParams (see LegacyStartAnswer). The
  // JSON forms also carry mount_capabilities() (containerd 2.4 reads them there).
  LegacyStartAnswer legacy_answer = LegacyStartAnswer::kPlainAddress;
  // The group of a container whose spec names none (no annotation above): non-empty, all
  // such containers of a namespace share one shim, whose runtime is then loaded once;
  // empty (the default, as containerd's runc shim): each gets a shim of its own. The
  // shim's group is this name and a digest of the binary and `cgroup`, so a start from
  // another binary or with another cgroup gets another shim; under SCHED_CORE nothing
  // is shared (a container's core-scheduling cookie is its own). A container also gets
  // its own shim when the shared one cannot take it (it is wedged, a shim of an older
  // libshim, or it kept ending as this start tried); that shim's log says why. A
  // plug-in with its own TaskService must count a Create as keeping the shim
  // (shim/shutdown_control.h) from the moment its handler is called, as the process
  // tier does: the shim's reservation for that task ends there.
  std::string shared_group;
  // How long a shared shim stays once nothing keeps it (shim/shutdown_control.h), so that
  // the next container finds it; Shutdown ends other shims at once.
  std::chrono::milliseconds shared_linger{0};
};

// How the long-lived server runs (Go's shim.Config and RegisterTTRPC have the same
// knobs). The defaults suit a runtime whose containers are the shim's descendants.
struct ServerOptions {
  // Threads for blocking work (Instance methods, runtime CLI calls); they start on demand
  // and retire when idle, so an idle shim is one thread.
  std::size_t pool_threads = 2;
  // PR_SET_CHILD_SUBREAPER: orphaned descendants (a container's init once `runc create`
  // exited) become the shim's children, so their exits are seen. Off for runtimes whose
  // processes live elsewhere (a VM).
  bool subreaper = true;
  // Point stderr at the bundle's `log` FIFO, which containerd copies into its own log.
  bool log_to_fifo = true;
  // Where libshim's logrus lines go; null: stderr (the FIFO above). A plug-in with its own
  // logging gives a sink that hands the lines to it (shim/logger.h CallbackLogSink).
  std::shared_ptr<LogSink> log_sink;
  // The buffer between a container process's stdout/stderr and its output FIFO, which
  // keeps the process writing while nobody reads the FIFO (containerd restarting): the
  // default for every container on the process tier, whose OCI annotations
  // io.libshim.output.buffer-bytes / spill-bytes / overflow override it
  // (docs/output-buffering.md). spill_dir is ignored here: the spill file goes to the
  // container's bundle (its `work` dir when there is one).
  OutputBufferOptions output_buffer;
};

class Manager {
 public:
  virtual ~Manager() = default;

  // Runtime name reported by -info and used as the log/error prefix, e.g.
  // "io.containerd.runc.v2".
  virtual std::string name() const = 0;
  // Version and revision printed by -v (default: libshim's version, no revision).
  virtual std::string version() const;
  virtual std::string revision() const { return ""; }

  // Options for the `start` action's daemon launch (grouping, cgroup, ...).
  virtual DaemonOptions daemon_options(const StartContext& context) const;

  // The `delete` action: clean up after task context.identity.id, whose shim may be
  // gone, and say how its init ended.
  virtual Status stop(const ActionContext& context, task::DeleteResponse* response) = 0;

  // The -info action (containerd 2.x). `options` is the runtime options Any, if any.
  // The default: name(), version(), revision() and the options echoed.
  virtual Status info(const ActionContext& context, const std::optional<shim::pb::Any>& options,
                      containerd::types::RuntimeInfo* info) const;

  // The mount types and transforms this shim performs itself (shim/mount_capabilities.h),
  // or nullopt (the default, as containerd's runc shim): containerd's mount manager does
  // every mount. Asked by `start` (with its runtime options), whose answer then carries
  // them for containerd 2.4 (a value with nothing in it still says "nothing beyond
  // plain mounts"), and by -info (with the options on its stdin, none when containerd
  // 2.2 - 2.4.0-beta.0 asks at Create), which then sets the annotation
  // containerd.io/runtime-allow-mounts unless info() set it. Names must be non-empty
  // UTF-8 without ',', '/', white space or control characters; otherwise the action
  // fails with InvalidArgument. containerd then leaves the claimed mounts in
  // CreateTaskRequest.rootfs: the process tier (RuntimeManager) mounts that rootfs on
  // the host itself, so claim mount types only from a TaskService that takes it.
  virtual std::optional<MountCapabilities> mount_capabilities(
      const std::optional<shim::pb::Any>& options) const;

  // The task service the long-lived server serves; called once in the daemon.
  virtual std::unique_ptr<TaskService> create_task_service(ServiceContext& context) = 0;

  // The daemon's settings; asked once, before anything else runs in it.
  virtual ServerOptions server_options() const { return {}; }
  // The daemon's Reaper; null (the default): libshim's signalfd subreaper. A plug-in
  // that reaps its children itself returns its own; it must see every child's exit.
  // Called on the main thread before the loop runs; `loop` is the event loop.
  virtual std::unique_ptr<Reaper> create_reaper(boost::asio::any_io_executor loop);
  // The pods this shim runs itself (shim/sandbox.h), served as containerd's Sandbox
  // service next to the task service; null (the default, as containerd's runc shim): no
  // sandbox service, so CRI handlers with `sandboxer = "shim"` fail at CreateSandbox.
  // Called once in the daemon, after create_task_service(), on the main thread.
  virtual std::unique_ptr<SandboxRuntime> create_sandbox_runtime(ServiceContext& context);
  // Registers ttrpc services of the plug-in's own next to the task and sandbox services;
  // they must outlive the server (keep them in the Manager). Called once after
  // create_sandbox_runtime(), on the main thread.
  virtual void register_services(ttrpc::Router& router, ServiceContext& context);
};

// The entry point: runs the action named on the command line and returns the exit code.
int run(int argc, char** argv, Manager& manager);

}  // namespace shim
