#include "vm_sandbox.h"

#include "host_cgroup.h"
#include "shim/linux/pod_cgroup.h"

namespace shim_vm {

using shim::Status;

namespace {
// WaitSandbox's status for a VM that ended by itself (qemu exited, the guest panicked).
constexpr std::uint32_t kVmEndedStatus = 255;
}  // namespace

Status VmSandbox::start(shim::SandboxStarted* started) {
  PodVm* vm = nullptr;
  if (Status s = runtime_.vm(where_, &vm); !s.ok()) return s;
  // CRI joins its containers to this pid's namespaces; in the guest a namespace given by a
  // path is the VM's own, so any live host process of the pod does: qemu.
  // The containers share the VM's UTS namespace (CRI gives them qemu's by path): the
  // VM's hostname is the pod's.
  if (!hostname_.empty()) {
    agent::SetHostnameRequest request;
    request.set_hostname(hostname_);
    agent::Empty answer;
    if (Status s = vm->agent()->sync("SetHostname", request, &answer); !s.ok()) return s;
  }
  started->pid = static_cast<std::uint32_t>(vm->qemu_pid());
  vm->on_exit([&events = events_](const std::string&) { events.exited(kVmEndedStatus); });
  return {};
}

Status VmSandbox::stop(std::chrono::seconds, std::uint32_t* exit_status) {
  runtime_.stop_vm("the pod's sandbox was stopped");
  *exit_status = 0;
  return {};
}

Status VmSandbox::shutdown() {
  runtime_.stop_vm("the pod's sandbox was shut down");
  return {};
}

Status VmSandbox::metrics(containerd::types::Metric* metric) {
  PodVm* vm = nullptr;
  if (Status s = runtime_.running_vm(&vm); !s.ok()) return s;
  if (!cgroup_parent_.empty())
    return shim::pod_cgroup_metrics(shim::CgroupFs(), cgroup_parent_, metric->mutable_data());
  agent::ContainerRequest request;  // no id: the guest's root cgroup
  agent::ContainerStatsResponse response;
  if (Status s = vm->agent()->sync("ContainerStats", request, &response); !s.ok()) return s;
  metric->mutable_data()->set_type_url(response.type_url());
  metric->mutable_data()->set_value(response.value());
  return {};
}

Status VmSandbox::details(boost::json::object* info) const {
  PodVm* vm = nullptr;
  if (!runtime_.running_vm(&vm).ok()) return {};
  (*info)["vm"] = {{"accelerator", vm->settings().accel},
                   {"kernelRelease", vm->kernel_release()},
                   {"qemuPid", vm->qemu_pid()}};
  return {};
}

Status VmSandboxRuntime::create(const shim::SandboxConfig& config, shim::SandboxEvents& events,
                                std::unique_ptr<shim::Sandbox>* sandbox) {
  shim::cri::PodSandboxConfig pod;
  if (Status s = decode_pod_config(config, &pod); !s.ok()) return s;
  std::string host_cgroup, cgroup_parent, why_none;
  if (Status s = vm_cgroup_of_sandbox(pod, config.id, &host_cgroup, &cgroup_parent, &why_none);
      !s.ok())
    return s;
  if (host_cgroup.empty())
    runtime_.context().logger.info("pod VM in the shim's cgroup", {{"reason", why_none}});
  if (config.netns_path.empty()) {
    runtime_.context().logger.info("pod VM without a network",
                                   {{"reason",
                                     "the pod has the host's network, which a VM "
                                     "cannot share"}});
  }
  VmPlacement where{.host_cgroup = std::move(host_cgroup), .netns_path = config.netns_path};
  *sandbox = std::make_unique<VmSandbox>(runtime_, events, std::move(where),
                                         std::move(cgroup_parent), pod.hostname());
  return {};
}

}  // namespace shim_vm
