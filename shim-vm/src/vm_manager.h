// VmManager: containerd-shim-kvm-v1 (runtime_type "io.containerd.kvm.v1"): the pod's
// containers run in a micro-VM of the pod (docs/vm.md). The process tier serves the task
// API; VmRuntime makes the VM and its containers.
//
// Threading: as shim::RuntimeManager.
#pragma once

#include <string>

#include "shim/runtime_manager.h"

namespace shim_vm {

inline constexpr const char* kRuntimeName = "io.containerd.kvm.v1";

class VmManager final : public shim::RuntimeManager {
 public:
  // `kernel` and `initrd`: where the build put the guest's (LIBSHIM_VM_* override them).
  VmManager(std::string kernel, std::string initrd)
      : kernel_(std::move(kernel)), initrd_(std::move(initrd)) {}

  std::string name() const override { return kRuntimeName; }
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override;
  // containerd 2.x's sandbox API: StartSandbox boots the same runtime's VM.
  std::unique_ptr<shim::SandboxRuntime> create_sandbox_runtime(
      shim::ServiceContext& context) override;
  // After a shim that died: its VM's processes and the container's share.
  shim::Status cleanup(const shim::ActionContext& context, std::int64_t* init_pid) override;

 private:
  std::string kernel_;
  std::string initrd_;
  class VmRuntime* runtime_ = nullptr;  // create_runtime()'s, which the task service owns
};

}  // namespace shim_vm
