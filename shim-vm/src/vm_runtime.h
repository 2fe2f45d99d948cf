// VmRuntime: the process tier's Runtime of containerd-shim-kvm-v1. One per shim daemon,
// so one per pod (containerd groups a pod's containers into one shim): the pod's VM boots
// at its first container's Create and stops with the shim.
//
// Threading: open() on the pool (several at once: the first boots, the others wait for
// it); the VM's end is noticed on the loop.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "pod_vm.h"
#include "shim/runtime.h"
#include "shim/service_context.h"
#include "vm_settings.h"

namespace shim_vm {

class VmRuntime final : public shim::Runtime {
 public:
  // `kernel` and `initrd`: the build's defaults (vm_settings.h).
  VmRuntime(shim::ServiceContext& context, std::string kernel, std::string initrd);
  ~VmRuntime() override;

  shim::Status open(const shim::ContainerConfig& config,
                    std::unique_ptr<shim::Instance>* instance) override;

  // The pod's VM, booted on first use where `where` says; the error of a boot that failed
  // or of a VM that ended (no container can run in the pod any more).
  shim::Status vm(const VmPlacement& where, PodVm** vm);
  // The pod's VM if it runs, else why not (FailedPrecondition before the first boot).
  shim::Status running_vm(PodVm** vm);
  // Stops the pod's VM for good: later Creates fail with `reason`.
  void stop_vm(const std::string& reason);

  shim::ServiceContext& context() { return context_; }

 private:
  shim::ServiceContext& context_;
  std::string kernel_;
  std::string initrd_;
  std::mutex mutex_;  // held across a boot: the other opens wait for the same VM
  std::unique_ptr<PodVm> vm_;
  shim::Status failed_;
};

}  // namespace shim_vm
