#include "support/runtime_binary.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "support/subprocess.h"

namespace shim::test {

std::optional<std::string> runc_binary_under_test() {
  const char* value = std::getenv(kRuncBinaryEnv);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string crun_wrapper_path() { return LIBSHIM_SOURCE_DIR "/tests/support/crun-cgroup-v1.sh"; }

std::string runsc_wrapper_path() {
  return LIBSHIM_SOURCE_DIR "/tests/support/runsc-no-network.sh";
}

std::optional<std::string> runtime_binary_unavailable(const std::string& binary) {
  if (binary.find('/') != std::string::npos && ::access(binary.c_str(), X_OK) != 0) {
    return fmt::format("runtime binary {} is missing or not executable", binary);
  }
  CommandResult version = run_command({binary, "--version"});
  if (!version.ok()) {
    return fmt::format("runtime binary {} does not run: {}", binary, version.describe());
  }
  return std::nullopt;
}

}  // namespace shim::test
