// VmSandbox: the pod's VM as containerd 2.x's sandbox API sees it (a handler with
// `sandboxer = "shim"`, shim/sandbox.h): StartSandbox boots the VM (no pause container),
// its pid is qemu's, the VM's hostname is the pod's, its host processes run in the pod's cgroup
// (host_cgroup.h); StopSandbox and ShutdownSandbox stop it; SandboxMetrics are the pod's cgroup on
// the host (the VM as the host sees it: its memory, guest RAM included, and all its CPU), or the
// guest's cgroup of all its containers for a pod without a cgroup parent. The containers the pod's
// tasks then create run in that VM (VmRuntime, the same one).
//
// Threading: as shim::Sandbox (the pool, one call at a time).
#pragma once

#include <memory>

#include "shim/sandbox.h"
#include "vm_runtime.h"

namespace shim_vm {

class VmSandbox final : public shim::Sandbox {
 public:
  // `where`: the host cgroup from vm_cgroup_of_sandbox() and CRI's netns; `cgroup_parent`
  // from vm_cgroup_of_sandbox(), `hostname` the pod's (PodSandboxConfig.hostname); empty:
  // none.
  VmSandbox(VmRuntime& runtime, shim::SandboxEvents& events, VmPlacement where,
            std::string cgroup_parent, std::string hostname)
      : runtime_(runtime),
        events_(events),
        where_(std::move(where)),
        cgroup_parent_(std::move(cgroup_parent)),
        hostname_(std::move(hostname)) {}

  shim::Status start(shim::SandboxStarted* started) override;
  shim::Status stop(std::chrono::seconds timeout, std::uint32_t* exit_status) override;
  shim::Status shutdown() override;
  shim::Status metrics(containerd::types::Metric* metric) override;
  shim::Status details(boost::json::object* info) const override;

 private:
  VmRuntime& runtime_;
  shim::SandboxEvents& events_;
  VmPlacement where_;
  std::string cgroup_parent_;
  std::string hostname_;
};

class VmSandboxRuntime final : public shim::SandboxRuntime {
 public:
  explicit VmSandboxRuntime(VmRuntime& runtime) : runtime_(runtime) {}
  shim::Status create(const shim::SandboxConfig& config, shim::SandboxEvents& events,
                      std::unique_ptr<shim::Sandbox>* sandbox) override;

 private:
  VmRuntime& runtime_;
};

}  // namespace shim_vm
