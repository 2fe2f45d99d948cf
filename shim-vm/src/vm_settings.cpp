#include "vm_settings.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "agent_channel.h"
#include "shim/linux/vsock.h"

namespace shim_vm {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// KVM boots a stock guest kernel only with hardware virtualisation: a /dev/kvm served
// in software (kvm_pvm, for nested clouds) needs a guest kernel built for it.
bool kvm_usable(std::string* reason) {
  int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *reason = "no usable /dev/kvm";
    return false;
  }
  ::close(fd);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("flags")) continue;
    if (line.find(" vmx") != std::string::npos || line.find(" svm") != std::string::npos) {
      *reason = "/dev/kvm with hardware virtualisation";
      return true;
    }
    break;
  }
  *reason = "/dev/kvm without vmx/svm (a software KVM such as kvm_pvm cannot boot this kernel)";
  return false;
}

// The TSC rate the guest is told: under TCG it cannot calibrate its TSC otherwise.
unsigned long tsc_khz() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("cpu MHz")) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) break;
    double mhz = std::strtod(line.c_str() + colon + 1, nullptr);
    if (mhz > 0) return static_cast<unsigned long>(mhz * 1000);
  }
  return 2000000;
}

unsigned unsigned_env(const char* name, unsigned fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  unsigned long parsed = std::strtoul(value, &end, 10);
  return end != nullptr && *end == '\0' && parsed > 0 && parsed < 1u << 20
             ? static_cast<unsigned>(parsed)
             : fallback;
}

shim::Status choose_channel(VmSettings* s) {
  std::string channel = env_or("LIBSHIM_VM_CHANNEL", "auto");
  s->vsock_device = env_or("LIBSHIM_VM_VSOCK_DEVICE", LIBSHIM_VM_VSOCK_DEVICE_DEFAULT);
  if (channel == "auto") {
    std::string why_not;
    bool vsock = shim::vhost_vsock_usable(&why_not);
    if (vsock && !s->initrd.empty()) {
      vsock = false;
      why_not = "LIBSHIM_VM_INITRD is set (it may lack vsock's modules)";
    }
    s->channel = vsock ? ChannelKind::kVsock : ChannelKind::kSerial;
    s->channel_reason = vsock ? "auto: /dev/vhost-vsock" : "auto: " + why_not;
    s->channel_chosen = true;
    return {};
  }
  for (ChannelKind kind : {ChannelKind::kSerial, ChannelKind::kVsock, ChannelKind::kHybridVsock}) {
    if (channel != channel_name(kind)) continue;
    s->channel = kind;
    s->channel_reason = "LIBSHIM_VM_CHANNEL";
    return {};
  }
  return shim::Status(
      shim::Code::kInvalidArgument,
      fmt::format("LIBSHIM_VM_CHANNEL={}: want serial, vsock, hybrid-vsock or auto", channel));
}

constexpr const char* kVsockInitrd = "initramfs-vsock.cpio.gz";

}  // namespace

std::string_view channel_name(ChannelKind kind) {
  switch (kind) {
    case ChannelKind::kSerial:
      return "serial";
    case ChannelKind::kVsock:
      return "vsock";
    case ChannelKind::kHybridVsock:
      return "hybrid-vsock";
  }
  return "?";
}

shim::Status vm_settings(const std::string& kernel, const std::string& initrd, VmSettings* out) {
  VmSettings s;
  s.kernel = env_or("LIBSHIM_VM_KERNEL", kernel);
  s.initrd = env_or("LIBSHIM_VM_INITRD", "");
  s.qemu = env_or("LIBSHIM_VM_QEMU", s.qemu);
  s.virtiofsd = env_or("LIBSHIM_VM_VIRTIOFSD", s.virtiofsd);
  s.memory_mib = unsigned_env("LIBSHIM_VM_MEMORY_MIB", s.memory_mib);
  s.cpus = unsigned_env("LIBSHIM_VM_CPUS", s.cpus);
  s.tcg_cache_mib = unsigned_env("LIBSHIM_VM_TCG_CACHE_MIB", s.tcg_cache_mib);
  std::string accel = env_or("LIBSHIM_VM_ACCEL", "auto");
  if (accel == "auto") {
    s.accel = kvm_usable(&s.accel_reason) ? "kvm" : "tcg";
    s.accel_reason = "auto: " + s.accel_reason;
  } else if (accel == "kvm" || accel == "tcg") {
    s.accel = accel;
    s.accel_reason = "LIBSHIM_VM_ACCEL";
  } else {
    return shim::Status(shim::Code::kInvalidArgument,
                        fmt::format("LIBSHIM_VM_ACCEL={}: want kvm, tcg or auto", accel));
  }
  if (shim::Status status = choose_channel(&s); !status.ok()) return status;
  // The build's initramfs for the channel: each leaves the other channel's modules out.
  s.serial_initrd = s.initrd.empty() ? initrd : s.initrd;
  if (s.initrd.empty()) {
    s.initrd = s.channel == ChannelKind::kSerial
                   ? initrd
                   : (std::filesystem::path(initrd).parent_path() / kVsockInitrd).string();
  }
  for (const auto& [what, path] :
       {std::pair{"kernel", s.kernel}, std::pair{"initramfs", s.initrd}}) {
    if (path.empty() || ::access(path.c_str(), R_OK) != 0) {
      return shim::Status(shim::Code::kFailedPrecondition,
                          fmt::format("the guest {} {:?} is not readable", what, path));
    }
  }
  *out = std::move(s);
  return {};
}

std::string kernel_command_line(const VmSettings& settings) {
  // panic=-1 and qemu's -no-reboot: a guest that panics ends the VM at once. reboot=t:
  // by a triple fault, which qemu ends on; the default (ACPI, then the keyboard
  // controller microvm lacks) took 1 s longer from the panic to qemu's exit under TCG.
  // initcall_blacklist=tracer_init_tracefs: no tracefs, whose file per trace event
  // (Linux 6.1 makes them all at boot) costs the guest 12 MiB of inodes and dentries.
  std::string line =
      "console=ttyS0 panic=-1 reboot=t quiet rdinit=/init "
      "initcall_blacklist=tracer_init_tracefs";
  if (settings.accel == "tcg") line += fmt::format(" tsc_early_khz={}", tsc_khz());
  // The agent's channel: the kernel hands a name=value it does not know (and without a
  // dot, which would make it a module's) to PID 1 as an environment variable.
  if (settings.channel != ChannelKind::kSerial)
    line += fmt::format(" libshim_channel=vsock:{}", kAgentVsockPort);
  return line;
}

}  // namespace shim_vm
