// CliManager: a whole shim over a runc-compatible OCI runtime CLI, as containerd's Go
// runc shim behaves (cmd/containerd-shim-runc-v2/manager/manager_linux.go): the shim
// cgroup from the runtime options, the `delete` action's `<cli> delete --force`, `-info`
// with `<cli> features`, and CliRuntime (shim/oci/cli_runtime.h) in the daemon. Our
// containerd-shim-runc-v2 is exactly this with ("io.containerd.runc.v2", "runc"):
//
//   int main(int argc, char** argv) {
//     shim::oci::CliManager manager("io.containerd.crun.v1", "crun");
//     return shim::run(argc, argv, manager);
//   }
//
// Threading: as shim::RuntimeManager (each method on the main thread of its action).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "shim/oci/cli_command.h"
#include "shim/runtime_manager.h"

namespace shim::oci {

class CliManager : public shim::RuntimeManager {
 public:
  // `name`: the runtime name containerd knows the shim by; `default_binary`: the CLI
  // when the runtime options name none.
  explicit CliManager(std::string name, std::string default_binary = std::string(kDefaultCliBinary))
      : name_(std::move(name)), default_binary_(std::move(default_binary)) {}

  std::string name() const override { return name_; }
  // The daemon joins Options.shim_cgroup when the runtime options set it.
  shim::DaemonOptions daemon_options(const shim::StartContext& context) const override;
  // Go's `delete`: the CLI and root the bundle's files name, `<cli> delete --force`
  // (skipped when runc has no state for the container), the init's pid from init.pid.
  shim::Status cleanup(const shim::ActionContext& context, std::int64_t* init_pid) override;
  // Name, version, the runc options echoed, `<cli> features`.
  shim::Status info(const shim::ActionContext& context, const std::optional<shim::pb::Any>& options,
                    containerd::types::RuntimeInfo* info) const override;
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override;
  // Pods without a pause container (shim/linux/pod_sandbox.h) for CRI runtime handlers
  // with `sandboxer = "shim"`; the sandbox knows no runtime CLI, the pod's containers come
  // through the task service as usual.
  std::unique_ptr<shim::SandboxRuntime> create_sandbox_runtime(
      shim::ServiceContext& context) override;

  // The CLI when the runtime options name none.
  const std::string& default_binary() const { return default_binary_; }

 private:
  std::string name_;
  std::string default_binary_;
};

}  // namespace shim::oci
