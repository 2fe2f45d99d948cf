// What a shim-mode pod asks of the shim, decided once at CreateSandbox from containerd's
// CreateSandboxRequest: which namespaces the pod gets (PodSandboxConfig.linux's
// namespace_options, as containerd's podsandbox controller gives them to the pause
// container: internal/cri/server/podsandbox/sandbox_run_linux.go, sandboxContainerSpec),
// its hostname, sysctls and cgroup parent.
#pragma once

#include <map>
#include <string>

#include "shim/pb/cri/pod_sandbox_config.pb.h"
#include "shim/sandbox.h"
#include "shim/status.h"

namespace shim::linux_pod {

struct PodPlan {
  std::string id;
  shim::cri::PodSandboxConfig config;  // the decoded options (defaults when none came)
  // Network: enter `netns_path` (CRI's netns, CNI already ran) when set; else a new,
  // empty netns unless the pod uses the host's network (network == NODE).
  std::string netns_path;
  bool own_network = true;
  bool own_ipc = true;      // ipc != NODE
  bool own_uts = true;      // network != NODE: a hostNetwork pod keeps the host's UTS
  bool shared_pid = false;  // pid == POD: a holder is the pod's pid 1
  std::string hostname;     // config.hostname; "" keeps the host's in the pod's UTS
  std::map<std::string, std::string> sysctls;
  std::string cgroup_parent;
};

// Decodes `config.options` (a runtime.v1.PodSandboxConfig; its type URL is not checked:
// CRI sends runtime.v1's, other callers may send none) and decides the plan.
// InvalidArgument for undecodable options or a sysctl the pod may not set
// (pod_sysctls.h); FailedPrecondition for a user-namespace pod.
shim::Status make_pod_plan(const shim::SandboxConfig& config, PodPlan* plan);

}  // namespace shim::linux_pod
