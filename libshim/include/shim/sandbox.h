// The sandbox tier: a pod that the shim itself runs, served as containerd's
// containerd.runtime.sandbox.v1.Sandbox (api/runtime/sandbox/v1/sandbox.proto). containerd
// 2.x's CRI calls it for a runtime handler with `sandboxer = "shim"`
// (plugins/sandbox/controller.go): CreateSandbox and StartSandbox instead of a pause
// container, SandboxStatus and Platform before each container, a WaitSandbox held open for
// the pod's life, StopSandbox, ShutdownSandbox, and (2.4) SandboxMetrics for pod stats.
//
// A vendor implements SandboxRuntime (makes a Sandbox per CreateSandbox) and Sandbox (one
// pod: namespaces, a VM, ...) and returns the SandboxRuntime from
// Manager::create_sandbox_runtime(). libshim does the rest: the ttrpc service on the task
// socket, the state containerd reads (SANDBOX_READY / SANDBOX_NOTREADY, pid, times, info
// JSON), WaitSandbox without a thread held, one sandbox per shim, and the shim's lifetime:
// a created sandbox keeps the shim through the task API's Shutdown (one comes after every
// task delete); ShutdownSandbox releases it and the shim exits once no task is left. The
// pod's containers reach the same socket through the task API (TaskService).
//
// Threading: every Sandbox and SandboxRuntime method runs on the shim's work pool (it may
// block), one at a time per sandbox, except the live-upgrade pair (save_for_upgrade,
// reopen), which runs on the event loop and must not block. SandboxEvents::exited() may
// be called from any thread. Exceptions: a method may throw; the RPC then fails with Internal
// "<Class>::<method> threw: <what>" and the sandbox keeps its state (shim/runtime.h).
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/pb/any.pb.h"
#include "shim/pb/containerd/metrics.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "shim/status.h"
#include "shim/timestamp.h"

namespace shim {

// What CreateSandbox hands over.
struct SandboxConfig {
  std::string id;                                  // the sandbox (pod) id
  std::string bundle;                              // its bundle: no config.json in CRI's flow
  std::vector<containerd::types::Mount> rootfs;    // CRI sends none
  std::optional<shim::pb::Any> options;            // CRI: a runtime.v1.PodSandboxConfig
  std::string netns_path;                          // CRI's netns; "" for a host-network pod
  std::map<std::string, std::string> annotations;  // the sandbox's annotations, if any
};

// What StartSandbox answers.
struct SandboxStarted {
  // The process whose namespaces are the pod's: CRI (2.0 - 2.4) joins its containers to
  // /proc/<pid>/ns/{net,ipc,uts} (and pid, user when the pod shares them), so it must be
  // a live process of the host's pid namespace for a pod whose containers join it.
  std::uint32_t pid = 0;
  // StartSandboxResponse.spec (containerd 2.3+), if the sandbox has one.
  std::optional<shim::pb::Any> spec;
};

// How a sandbox ended: StopSandbox's outcome or the sandbox's own report.
struct SandboxExit {
  std::uint32_t status = 0;                  // WaitSandboxResponse.exit_status
  std::chrono::system_clock::time_point at;  // WaitSandboxResponse.exited_at
};

// Lets a sandbox report that it ended by itself (its VM died, its holder process exited):
// the sandbox turns NOTREADY and WaitSandbox is answered. Any thread; later calls and
// calls after StopSandbox are ignored.
class SandboxEvents {
 public:
  virtual ~SandboxEvents() = default;
  // The sandbox ended by itself with `exit_status`, now.
  virtual void exited(std::uint32_t exit_status) = 0;
};

// One pod. Created by SandboxRuntime::create (CreateSandbox), destroyed (on the pool) after
// a successful shutdown(), or with the shim.
class Sandbox {
 public:
  virtual ~Sandbox() = default;

  // StartSandbox: make the pod live. Called after create, and again only if it failed;
  // not after a StopSandbox or an exit report.
  virtual Status start(SandboxStarted* started) = 0;

  // StopSandbox: CRI has killed and deleted the pod's containers; stop what the sandbox
  // itself runs, within `timeout` if it is not zero (CRI sends zero: no limit). Its exit
  // status answers WaitSandbox. Called once it started (a StopSandbox before StartSandbox
  // only marks the sandbox stopped), again only if it failed; not called if the sandbox
  // reported its own exit first.
  virtual Status stop(std::chrono::seconds timeout, std::uint32_t* exit_status) = 0;

  // ShutdownSandbox: release everything the pod holds (namespaces, files, mounts, the
  // VM). Called whatever state the sandbox is in (also after a failed start, and without
  // stop); again only if it failed (the sandbox then stays, for containerd's retry). A
  // sandbox that create() made while failing is shut down at once.
  virtual Status shutdown() = 0;

  // Platform (os, architecture, variant). Default: this host's (linux/<GOARCH>).
  virtual Status platform(containerd::types::Platform* platform) const;

  // SandboxMetrics: `metric->data` is an Any of io.containerd.cgroups.v1.Metrics or
  // io.containerd.cgroups.v2.Metrics (containerd 2.4's CRI pod stats parse nothing
  // else); libshim sets id and timestamp when left empty. Default: Unimplemented.
  virtual Status metrics(containerd::types::Metric* metric);

  // What SandboxStatus(verbose) adds under its "info" key, as JSON members (CRI parses
  // the value as JSON). libshim adds id, pid, state, bundle, netnsPath, createdAt,
  // startedAt, exitedAt and exitStatus, which win over members of the same name;
  // containerd 2.4's CRI decodes the object into its SandboxInfo, so a member named as
  // one of its fields (image, config, runtimeSpec, ...) must have that field's type.
  // Called only for a verbose status, in the sandbox's turn. Default: none.
  virtual Status details(boost::json::object* info) const;

  // Live upgrade (shim/live_upgrade.h, docs/live-upgrade.md): what SandboxRuntime::reopen
  // needs to serve this sandbox again in the new program, as JSON members, and every fd it
  // needs into *fds (they stay open across the exec with the same numbers). On the event
  // loop, while none of this sandbox's other methods runs; it must change nothing (the
  // exec may fail and this program go on). Default: Unimplemented, and a shim serving
  // the sandbox refuses the upgrade with that reason.
  virtual Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds);
};

// Makes the shim's sandbox.
class SandboxRuntime {
 public:
  virtual ~SandboxRuntime() = default;

  // CreateSandbox: prepare the pod (nothing runs yet). `events` outlives the sandbox.
  virtual Status create(const SandboxConfig& config, SandboxEvents& events,
                        std::unique_ptr<Sandbox>* sandbox) = 0;

  // Live upgrade, in the new program before it serves and before its reaper starts: the
  // sandbox `saved` (what Sandbox::save_for_upgrade wrote, possibly in another version of
  // the shim) describes. `config` has the id, bundle and netns path only; the sandbox
  // saved whatever else it needs. Take duplicates of the saved fds (F_DUPFD_CLOEXEC) and
  // leave the numbers themselves open: until every participant restored, the upgrade can
  // still go back to the old program, which needs them; libshim closes them once it is
  // committed. On the event loop (not running yet). Default: Unimplemented.
  virtual Status reopen(const SandboxConfig& config, const boost::json::object& saved,
                        SandboxEvents& events, std::unique_ptr<Sandbox>* sandbox);
};

}  // namespace shim
