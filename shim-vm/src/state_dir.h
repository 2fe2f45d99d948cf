// Where a pod's VM keeps its files on the host: /run/libshim-vm/<hash of namespace and
// pod>, short enough for the unix sockets in it, found again by the `delete` action.
//
//   agent.sock vfs.sock     the serial agent channel (qemu connects) and virtiofsd's socket
//   vsock.sock vsock-vhost.sock  the hybrid vsock daemon's sockets (the shim's, qemu's)
//   qemu.pid virtiofsd.pid vsockd.pid  for the clean-up after a shim that died
//   console.log vm.log      the guest's console; qemu's and its daemons' messages
//   shared/                 the shared directory: shared/<container>/rootfs, .../mounts/<n>;
//                           shared/.agent-token until the agent read it (vsock channels)
//
// Threading: plain functions (blocking file system calls).
#pragma once

#include <string>

namespace shim_vm {

std::string pod_state_dir(const std::string& ns, const std::string& pod);

// The file in each container's bundle naming its pod's state dir (the `delete` action
// of a pod's other containers knows only their own id).
inline constexpr const char* kStateDirFile = "vm-state-dir";

// Unmounts shared/ (lazily, with whatever is mounted under it) and removes the state
// dir without ever deleting a file under shared/: a mount that did not go away keeps its
// contents (a container's rootfs), and the directory stays.
void remove_state_dir(const std::string& dir);

}  // namespace shim_vm
