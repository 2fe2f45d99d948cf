// What a pod's VM is booted with: the programs, the guest's kernel and initramfs, the
// accelerator, its size. From the environment the shim inherited (containerd's) over the
// built-in defaults, so an operator can point a node at other files.
//
//   LIBSHIM_VM_KERNEL, LIBSHIM_VM_INITRD   the guest kernel and initramfs
//   LIBSHIM_VM_QEMU, LIBSHIM_VM_VIRTIOFSD  the programs
//   LIBSHIM_VM_ACCEL                       kvm, tcg, or auto (the default)
//   LIBSHIM_VM_MEMORY_MIB, LIBSHIM_VM_CPUS the guest's size (256, 1)
//   LIBSHIM_VM_CHANNEL                     how the shim reaches the agent: serial
//                                          (virtio-serial), vsock (the kernel's
//                                          vhost-vsock), hybrid-vsock (a vhost-user
//                                          vsock daemon), or auto (the default: vsock
//                                          where /dev/vhost-vsock opens, else serial)
//   LIBSHIM_VM_VSOCK_DEVICE                the daemon for hybrid-vsock (vhost-device-vsock;
//                                          default: where cmake/fetch-vsock-device.sh
//                                          puts it)
//
// Threading: plain functions; settings are values.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim_vm {

// The agent channel (agent_channel.h).
enum class ChannelKind {
  kSerial,       // a virtio-serial port, qemu connected to the shim's unix socket
  kVsock,        // AF_VSOCK through the host kernel's vhost-vsock
  kHybridVsock,  // AF_VSOCK in the guest, a vhost-user daemon's unix socket on the host
};
std::string_view channel_name(ChannelKind kind);  // "serial", "vsock", "hybrid-vsock"

struct VmSettings {
  std::string qemu = "qemu-system-x86_64";
  std::string virtiofsd = "/usr/lib/qemu/virtiofsd";
  std::string kernel;
  std::string initrd;
  std::string accel;         // "kvm" or "tcg": what boots the guest
  std::string accel_reason;  // why that one ("auto: /dev/kvm has no vmx/svm CPU")
  ChannelKind channel = ChannelKind::kSerial;
  std::string channel_reason;   // why that one ("auto: open /dev/vhost-vsock: ...")
  bool channel_chosen = false;  // chosen by "auto", not asked for: vsock may fall back
  std::string vsock_device;     // the vhost-user vsock daemon, for kHybridVsock
  std::string serial_initrd;    // the initrd for the serial channel (a vsock one falling back)
  unsigned memory_mib = 256;
  unsigned cpus = 1;
  // TCG's translation cache (qemu -accel tcg,tb-size): host memory against boot time.
  unsigned tcg_cache_mib = 14;
  std::chrono::milliseconds boot_timeout{60000};
};

// The settings for this host: `kernel` and `initrd` are the defaults the build knows
// (for a vsock channel the initrd is initramfs-vsock.cpio.gz beside `initrd`, the build's
// other one, unless LIBSHIM_VM_INITRD names one for every channel: then "auto" is serial,
// since that initramfs may lack vsock's modules).
shim::Status vm_settings(const std::string& kernel, const std::string& initrd, VmSettings* out);

// The kernel command line for `settings`.
std::string kernel_command_line(const VmSettings& settings);

}  // namespace shim_vm
