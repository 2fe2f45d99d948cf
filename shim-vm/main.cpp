// containerd-shim-kvm-v1: the VM runtime class on libshim (runtime_type
// "io.containerd.kvm.v1"): each pod runs in a qemu micro-VM, its containers are processes
// of the guest, driven by libshim-vm-agent over ttrpc (docs/vm.md).
#include "vm_manager.h"

int main(int argc, char** argv) {
  shim_vm::VmManager manager(LIBSHIM_VM_KERNEL, LIBSHIM_VM_INITRD);
  return shim::run(argc, argv, manager);
}
