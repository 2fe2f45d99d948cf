#include "vm_runtime.h"

#include "host_cgroup.h"
#include "shim/logger.h"
#include "state_dir.h"
#include "vm_instance.h"
#include "vm_network.h"

namespace shim_vm {

using shim::Status;

VmRuntime::VmRuntime(shim::ServiceContext& context, std::string kernel, std::string initrd)
    : context_(context), kernel_(std::move(kernel)), initrd_(std::move(initrd)) {}

// libshim destroys the runtime after its loop stopped: nothing reaps the VM's processes.
VmRuntime::~VmRuntime() {
  if (vm_) vm_->stop(PodVm::Reaping::kHere);
}

Status VmRuntime::vm(const VmPlacement& where, PodVm** vm) {
  std::lock_guard lock(mutex_);
  if (!failed_.ok()) return failed_;
  if (vm_) {
    *vm = vm_.get();
    return {};
  }
  VmSettings settings;
  if (Status s = vm_settings(kernel_, initrd_, &settings); !s.ok()) return s;
  auto started = std::chrono::steady_clock::now();
  std::string dir = pod_state_dir(context_.identity.ns, context_.identity.id);
  Status booted = PodVm::boot(context_, settings, dir, where, &vm_);
  if (!booted.ok()) {
    vm_.reset();
    remove_state_dir(dir);
    // Not kept as failed_: the next Create tries again (a transient resource shortage).
    return booted;
  }
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  context_.logger.info("pod VM booted", {{"accel", settings.accel},
                                         {"accel_reason", settings.accel_reason},
                                         {"kernel", vm_->kernel_release()},
                                         {"boot_ms", std::to_string(took.count())},
                                         {"host_cgroup", where.host_cgroup},
                                         {"state_dir", dir}});
  vm_->on_exit([this](std::string reason) {
    context_.logger.error("pod VM ended", {{"error", reason}});
    std::lock_guard lock(mutex_);
    failed_ = Status(shim::Code::kUnavailable, reason);
  });
  *vm = vm_.get();
  return {};
}

Status VmRuntime::running_vm(PodVm** vm) {
  std::lock_guard lock(mutex_);
  if (!failed_.ok()) return failed_;
  if (!vm_) return Status(shim::Code::kFailedPrecondition, "the pod's VM is not booted");
  *vm = vm_.get();
  return {};
}

void VmRuntime::stop_vm(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (failed_.ok()) failed_ = Status(shim::Code::kFailedPrecondition, reason);
  if (vm_) vm_->stop();
}

Status VmRuntime::open(const shim::ContainerConfig& config,
                       std::unique_ptr<shim::Instance>* instance) {
  PodVm* vm = nullptr;
  std::string why_none;
  std::string why_no_network;
  VmPlacement where{.host_cgroup = vm_cgroup_of_spec(config.spec, &why_none),
                    .netns_path = netns_of_spec(config.spec, &why_no_network)};
  {
    std::lock_guard lock(mutex_);
    if (!vm_ && where.host_cgroup.empty())
      context_.logger.info("pod VM in the shim's cgroup", {{"reason", why_none}});
    if (!vm_ && where.netns_path.empty())
      context_.logger.info("pod VM without a network", {{"reason", why_no_network}});
  }
  if (Status s = this->vm(where, &vm); !s.ok()) return s;
  *instance = std::make_unique<VmInstance>(context_, config, *vm);
  return {};
}

}  // namespace shim_vm
