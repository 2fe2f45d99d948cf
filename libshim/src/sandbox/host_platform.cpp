#include "sandbox/host_platform.h"

#include <sys/utsname.h>

#include <array>
#include <utility>

namespace shim {

// uname machine names and Go's GOARCH for them (Go's runtime/internal/sys and
// containerd/platforms' normalizeArch agree on these).
std::string go_architecture(std::string_view machine) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 13> kNames{{
      {"x86_64", "amd64"},
      {"amd64", "amd64"},
      {"i386", "386"},
      {"i486", "386"},
      {"i586", "386"},
      {"i686", "386"},
      {"aarch64", "arm64"},
      {"arm64", "arm64"},
      {"ppc64le", "ppc64le"},
      {"ppc64", "ppc64"},
      {"s390x", "s390x"},
      {"riscv64", "riscv64"},
      {"loongarch64", "loong64"},
  }};
  for (const auto& [name, go_name] : kNames) {
    if (machine == name) return std::string(go_name);
  }
  if (machine.starts_with("armv") || machine == "arm") return "arm";
  if (machine == "mips64") return "mips64";
  return std::string(machine);
}

std::string go_arm_variant(std::string_view machine) {
  // "armv7l", "armv6l", "armv5tel": the digit after "armv" is GOARM.
  if (!machine.starts_with("armv") || machine.size() < 5) return "";
  char digit = machine[4];
  if (digit < '5' || digit > '8') return "";
  return std::string("v") + digit;
}

std::string host_machine() {
  struct utsname name {};
  if (::uname(&name) != 0) return "";
  return name.machine;
}

}  // namespace shim
