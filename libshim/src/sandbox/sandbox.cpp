// The defaults of shim::Sandbox's optional methods (shim/sandbox.h).
#include "shim/sandbox.h"

#include "sandbox/host_platform.h"

namespace shim {

// CRI asks before each container of the pod and builds the container's spec and mounts
// for that platform (internal/cri/server/container_create.go); containerd names
// platforms as Go does, so the default is what a Go runtime on this host would say:
// linux/<GOARCH>[/<GOARM variant>].
Status Sandbox::platform(containerd::types::Platform* platform) const {
  const std::string machine = host_machine();
  platform->set_os("linux");
  platform->set_architecture(go_architecture(machine));
  platform->set_variant(go_arm_variant(machine));
  return {};
}

Status Sandbox::metrics(containerd::types::Metric*) { return not_implemented("sandbox metrics"); }

Status Sandbox::details(boost::json::object*) const { return {}; }

Status Sandbox::save_for_upgrade(boost::json::object*, std::vector<int>*) {
  return Status(Code::kUnimplemented, "this sandbox cannot be carried across a live upgrade");
}

Status SandboxRuntime::reopen(const SandboxConfig& config, const boost::json::object&,
                              SandboxEvents&, std::unique_ptr<Sandbox>*) {
  return Status(Code::kUnimplemented, "this sandbox runtime cannot reopen sandbox " + config.id +
                                          " after a live upgrade");
}

}  // namespace shim
