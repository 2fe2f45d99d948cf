#include "linux/capability_names.h"

#include <linux/capability.h>

#include <array>

#include <fmt/format.h>

namespace shim {
namespace {

// Indexed by number (capabilities(7), <linux/capability.h>).
constexpr std::array<std::string_view, 41> kNames = {"CAP_CHOWN",
                                                     "CAP_DAC_OVERRIDE",
                                                     "CAP_DAC_READ_SEARCH",
                                                     "CAP_FOWNER",
                                                     "CAP_FSETID",
                                                     "CAP_KILL",
                                                     "CAP_SETGID",
                                                     "CAP_SETUID",
                                                     "CAP_SETPCAP",
                                                     "CAP_LINUX_IMMUTABLE",
                                                     "CAP_NET_BIND_SERVICE",
                                                     "CAP_NET_BROADCAST",
                                                     "CAP_NET_ADMIN",
                                                     "CAP_NET_RAW",
                                                     "CAP_IPC_LOCK",
                                                     "CAP_IPC_OWNER",
                                                     "CAP_SYS_MODULE",
                                                     "CAP_SYS_RAWIO",
                                                     "CAP_SYS_CHROOT",
                                                     "CAP_SYS_PTRACE",
                                                     "CAP_SYS_PACCT",
                                                     "CAP_SYS_ADMIN",
                                                     "CAP_SYS_BOOT",
                                                     "CAP_SYS_NICE",
                                                     "CAP_SYS_RESOURCE",
                                                     "CAP_SYS_TIME",
                                                     "CAP_SYS_TTY_CONFIG",
                                                     "CAP_MKNOD",
                                                     "CAP_LEASE",
                                                     "CAP_AUDIT_WRITE",
                                                     "CAP_AUDIT_CONTROL",
                                                     "CAP_SETFCAP",
                                                     "CAP_MAC_OVERRIDE",
                                                     "CAP_MAC_ADMIN",
                                                     "CAP_SYSLOG",
                                                     "CAP_WAKE_ALARM",
                                                     "CAP_BLOCK_SUSPEND",
                                                     "CAP_AUDIT_READ",
                                                     "CAP_PERFMON",
                                                     "CAP_BPF",
                                                     "CAP_CHECKPOINT_RESTORE"};

static_assert(CAP_CHOWN == 0 && CAP_SYS_ADMIN == 21 && CAP_SETFCAP == 31 && CAP_AUDIT_READ == 37);
#ifdef CAP_CHECKPOINT_RESTORE
static_assert(CAP_CHECKPOINT_RESTORE == 40 && CAP_BPF == 39 && CAP_PERFMON == 38);
#endif

}  // namespace

std::optional<int> capability_number(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::string capability_name(int number) {
  if (number >= 0 && static_cast<std::size_t>(number) < kNames.size())
    return std::string(kNames[number]);
  return fmt::format("capability {}", number);
}

}  // namespace shim
