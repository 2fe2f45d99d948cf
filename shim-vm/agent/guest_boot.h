// What the agent does as PID 1 of the pod's VM before it serves: the kernel file
// systems, the modules of the initramfs, the shared directory, the agent channel.
//
// Threading: main() only, before the loop runs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shim/status.h"
#include "shim/unique_fd.h"
#include "shim/vm/agent.pb.h"

namespace shim_vm_agent {

// Where the host's shared directory (virtio-fs tag "shared") is mounted in the guest.
inline constexpr const char* kSharedDir = "/run/shared";
// The virtio-serial port name of the agent channel.
inline constexpr const char* kChannelName = "agent";

// Moves the guest's root from the initramfs to a tmpfs, as switch_root does: pivot_root
// (which a container's start needs) refuses a root on the initial rootfs. The
// initramfs's files are deleted first, so their memory goes back to the guest.
shim::Status leave_initramfs();
// Mounts /proc, /sys, /dev (devtmpfs), /dev/pts, /dev/shm, /sys/fs/cgroup (v2, with its
// controllers enabled for children), /run and /tmp (tmpfs).
shim::Status mount_kernel_filesystems();
// The modules of one device, loaded only where the VM has it: the NIC's (virtio_net and
// what it needs, for a pod with a network) and the agent channel's (virtio-serial's or
// vsock's; the other one's are never loaded).
inline const std::vector<std::string> kNetworkModules = {"virtio_net.ko", "net_failover.ko",
                                                         "failover.ko"};
inline const std::vector<std::string> kSerialModules = {"virtio_console.ko"};
inline const std::vector<std::string> kVsockModules = {
    "vsock.ko", "vmw_vsock_virtio_transport_common.ko", "vmw_vsock_virtio_transport.ko"};

// Modules loaded later (the NIC's at SetupNetwork), so that a VM without their device
// does not pay their memory. Held open from the initramfs, which is gone by then.
class DeferredModules {
 public:
  explicit DeferredModules(std::vector<std::string> names) : names_(std::move(names)) {}
  // Whether `name` ("virtio_net.ko") waits for load().
  bool defers(const std::string& name) const;
  void hold(std::string name, shim::UniqueFd fd);
  // Loads what is held, in load order; once (later calls: nothing).
  shim::Status load();

 private:
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, shim::UniqueFd>> held_;
};

// Loads the modules named in `dir`/load-order, in that order, from `dir`: those
// `deferred` defers go to it, those in `skipped` are left alone.
shim::Status load_modules(const std::string& dir, DeferredModules* deferred,
                          const std::vector<std::string>& skipped);
// Lets the balloon's free page reporting hand free blocks of 32 KiB and more back to the
// host (the kernel's default, 2 MiB blocks, leaves most of what boot touched and freed on
// the host). Needs /sys; a kernel without page reporting is left as it is (a warning on
// the console).
void tune_page_reporting();
// Sets the VM's hostname (the agent's UTS namespace, the guest's root one).
// InvalidArgument for a name sethostname(2) refuses.
shim::Status set_guest_hostname(const std::string& name);
// Gives the VM's NICs the pod's interfaces, addresses and routes (shim/linux/pod_network.h),
// in the guest's root network namespace, which the containers share.
shim::Status set_up_guest_network(const libshim::vm::agent::v1::SetupNetworkRequest& request);
// Mounts the virtio-fs share `tag` at `target`.
shim::Status mount_shared(const std::string& tag, const std::string& target);
// Opens the virtio-serial port named `name` (read/write), waiting up to `timeout_ms` for
// the device to appear.
shim::Status open_channel(const std::string& name, int timeout_ms, shim::UniqueFd* fd);
// The vsock port of the agent channel the kernel command line asks for
// (libshim_channel=vsock:<port>, which the kernel hands PID 1 as an environment
// variable; removed from it here), or 0 for the virtio-serial channel (no such
// variable). InvalidArgument for another value.
shim::Status vsock_channel_port(std::uint32_t* port);
// The vsock channel (shim-vm/src/agent_channel.h): reads and removes the token the shim
// left in the shared directory, listens on vsock `port` and returns the first connection
// whose first line is the token (others are closed; none is accepted after it).
shim::Status accept_vsock_channel(std::uint32_t port, shim::UniqueFd* fd);

}  // namespace shim_vm_agent
