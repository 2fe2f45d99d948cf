// A pod without a pause container, for any runc-compatible runtime (shim::oci::CliManager
// serves it): the Sandbox containerd 2.x's CRI calls with `sandboxer = "shim"`
// (shim/sandbox.h).
//
// What a pod is here:
//   * Namespaces: the shim's main thread enters them at StartSandbox (CRI's netns, a new
//     IPC namespace, a new UTS namespace with the pod's hostname; the host's where the pod
//     uses the host's) and StartSandbox answers the shim's own pid, so CRI's containers
//     join /proc/<shim>/ns/{net,ipc,uts}: one host process per pod instead of shim plus
//     pause. Every other thread and every process the shim spawns stays in the host's.
//   * A pod with a shared pid namespace (pid == POD) gets a holder: a forked copy of the
//     shim that is the new pid namespace's init (reaps orphans, no exec). Its pid is then
//     the sandbox's. StopSandbox kills it (exit status 137); an unexpected exit ends the
//     sandbox (SandboxEvents::exited).
//   * The pod's sysctls (namespaced ones only) are written in its namespaces.
//   * The files CRI bind-mounts into each container: <cri root>/sandboxes/<id>/{hostname,
//     hosts,resolv.conf} and a 64 MiB tmpfs at <cri state>/sandboxes/<id>/shm, as
//     containerd's podsandbox controller writes them; removed at ShutdownSandbox.
//   * SandboxMetrics: the cgroup statistics of linux.cgroup_parent.
//   * User-namespace pods are refused at CreateSandbox (FailedPrecondition).
// The namespaces stay until the shim exits (after ShutdownSandbox and the last task).
//
// Requirements: the shim's event loop runs on the process's main thread (libshim's daemon
// does: protocol/serve.cpp); start() fails otherwise. CAP_SYS_ADMIN (setns, unshare,
// mounts). Spawned processes and pool threads stay in the host's namespaces because the
// pod registers WorkPool::set_thread_start on ServiceContext::pool.
//
// Threading: as shim/sandbox.h. Methods run on the work pool; the namespace work is
// posted to ServiceContext::executor (the loop, on the main thread) and waited for there,
// so the loop must be running and never wait for the pool itself.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "shim/linux/cgroup.h"
#include "shim/sandbox.h"
#include "shim/service_context.h"

namespace shim::linux_pod {

// Where the pod finds the host's files (tests point them elsewhere).
struct PodSandboxOptions {
  std::string proc_sys = "/proc/sys";            // sysctls
  std::string etc_hosts = "/etc/hosts";          // copied into the pod's hosts
  std::string resolv_conf = "/etc/resolv.conf";  // copied when the pod has no DNS config
  shim::CgroupFs cgroup_fs;                      // SandboxMetrics
  // How long stop() and shutdown() wait for a killed holder's exit to be reaped.
  std::chrono::seconds holder_exit_timeout{10};
};

// The SandboxRuntime of pauseless pods: makes the Sandbox described at the top of this
// header for each CreateSandbox (one per shim).
class PodSandboxRuntime final : public shim::SandboxRuntime {
 public:
  // `context` outlives the runtime and its sandboxes. Called on the main thread (from
  // Manager::create_sandbox_runtime).
  explicit PodSandboxRuntime(shim::ServiceContext& context, PodSandboxOptions options = {});

  // Decodes the PodSandboxConfig, checks it (user namespaces, sysctls) and finds
  // containerd's directories from the bundle. Nothing runs and nothing is written yet.
  shim::Status create(const shim::SandboxConfig& config, shim::SandboxEvents& events,
                      std::unique_ptr<shim::Sandbox>* sandbox) override;
  // Live upgrade: the pod as the old program left it (its namespaces are still the main
  // thread's, its holder still our child): new pool threads go back to the host's
  // namespaces again, the holder's exit is watched again.
  shim::Status reopen(const shim::SandboxConfig& config, const boost::json::object& saved,
                      shim::SandboxEvents& events,
                      std::unique_ptr<shim::Sandbox>* sandbox) override;

 private:
  shim::ServiceContext& context_;
  PodSandboxOptions options_;
};

}  // namespace shim::linux_pod
