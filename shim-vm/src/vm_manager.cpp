#include "vm_manager.h"

#include "shim/action_context.h"
#include "shim/fs.h"
#include "state_dir.h"
#include "vm_runtime.h"
#include "vm_sandbox.h"

namespace shim_vm {

std::unique_ptr<shim::Runtime> VmManager::create_runtime(shim::ServiceContext& context) {
  auto runtime = std::make_unique<VmRuntime>(context, kernel_, initrd_);
  runtime_ = runtime.get();
  return runtime;
}

// Called after create_task_service(), so after create_runtime(); both live as long as
// the daemon.
std::unique_ptr<shim::SandboxRuntime> VmManager::create_sandbox_runtime(shim::ServiceContext&) {
  if (runtime_ == nullptr) return nullptr;
  return std::make_unique<VmSandboxRuntime>(*runtime_);
}

shim::Status VmManager::cleanup(const shim::ActionContext& context, std::int64_t* init_pid) {
  *init_pid = -1;  // a guest's pid means nothing on the host
  // The pod's shim is gone (its qemu and virtiofsd died with it): what is left is the
  // state dir with the shares mounted in it.
  std::string dir;
  if (!shim::read_file(context.identity.bundle + "/" + kStateDirFile, &dir).ok() ||
      !dir.starts_with("/run/libshim-vm/"))
    dir = pod_state_dir(context.identity.ns, context.identity.id);
  std::string error;
  if (PodVm::clean_up(dir, &error))
    context.logger.info("cleaned up the pod's VM after its shim", {{"state_dir", dir}});
  if (!error.empty())
    context.logger.warn("the pod VM's cgroup or network not restored",
                        {{"state_dir", dir}, {"error", error}});
  return {};
}

}  // namespace shim_vm
