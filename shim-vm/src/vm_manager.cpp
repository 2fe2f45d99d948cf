#include "vm_manager.h"

#include "shim/action_context.h"
#include "state_dir.h"
#include "vm_runtime.h"

namespace shim_vm {

std::unique_ptr<shim::Runtime> VmManager::create_runtime(shim::ServiceContext& context) {
  return std::make_unique<VmRuntime>(context, kernel_, initrd_);
}

shim::Status VmManager::cleanup(const shim::ActionContext& context, std::int64_t* init_pid) {
  *init_pid = -1;  // a guest's pid means nothing on the host
  // The pod's shim is gone (its qemu and virtiofsd died with it): what is left is the
  // state dir with the shares mounted in it.
  PodVm::clean_up(pod_state_dir(context.identity.ns, context.identity.id));
  return {};
}

}  // namespace shim_vm
