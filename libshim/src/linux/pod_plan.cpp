#include "linux/pod_plan.h"

#include <fmt/format.h>

#include "linux/pod_sysctls.h"

namespace shim::linux_pod {

namespace {

using shim::cri::NamespaceMode;

shim::Status decode_options(const shim::SandboxConfig& config, shim::cri::PodSandboxConfig* out) {
  if (!config.options.has_value()) return {};
  if (!out->ParseFromString(config.options->value())) {
    return shim::Status(shim::Code::kInvalidArgument,
                        fmt::format("sandbox {}: options ({}) are not a PodSandboxConfig",
                                    config.id, config.options->type_url()));
  }
  return {};
}

}  // namespace

shim::Status make_pod_plan(const shim::SandboxConfig& config, PodPlan* plan) {
  *plan = PodPlan{};
  plan->id = config.id;
  if (shim::Status s = decode_options(config, &plan->config); !s.ok()) return s;
  const shim::cri::LinuxPodSandboxConfig& linux_config = plan->config.linux();
  const shim::cri::NamespaceOption& namespaces =
      linux_config.security_context().namespace_options();
  // setns(2) into a user namespace needs a single-threaded caller, and the shim has its
  // pool and loop threads; creating one in the shim would also need the mappings CRI
  // keeps for the containers. Out of scope: refuse instead of running the pod without it.
  if (namespaces.has_userns_options() && namespaces.userns_options().mode() == NamespaceMode::POD) {
    return shim::Status(
        shim::Code::kFailedPrecondition,
        fmt::format("sandbox {}: user-namespace pods (hostUsers: false) are not supported by "
                    "this shim's sandboxer: use the podsandbox sandboxer for them",
                    config.id));
  }
  plan->own_network = namespaces.network() != NamespaceMode::NODE;
  plan->netns_path = plan->own_network ? config.netns_path : std::string();
  plan->own_ipc = namespaces.ipc() != NamespaceMode::NODE;
  plan->own_uts = plan->own_network;
  plan->shared_pid = namespaces.pid() == NamespaceMode::POD;
  plan->hostname = plan->config.hostname();
  plan->cgroup_parent = linux_config.cgroup_parent();
  for (const auto& [key, value] : linux_config.sysctls()) plan->sysctls.emplace(key, value);
  if (shim::Status s = check_sysctls(plan->sysctls, plan->own_network, plan->own_ipc); !s.ok()) {
    return shim::Status(s.code(), fmt::format("sandbox {}: {}", config.id, s.message()));
  }
  return {};
}

}  // namespace shim::linux_pod
