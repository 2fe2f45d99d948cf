// containerd-shim-mountcaps-v1: the shim over runc (shim/oci/cli_manager.h) that declares
// mount capabilities (types "erofs", transforms "format") and answers containerd 1.7 -
// 2.2 in JSON version 3, for tests/integration/mount_capabilities_e2e_test.cpp: under a
// containerd that knows neither, the extension must change nothing.
#include <optional>

#include "shim/oci/cli_manager.h"

namespace {

class MountCapabilitiesManager final : public shim::oci::CliManager {
 public:
  MountCapabilitiesManager() : CliManager("io.containerd.mountcaps.v1", "runc") {}

  shim::DaemonOptions daemon_options(const shim::StartContext& context) const override {
    shim::DaemonOptions options = CliManager::daemon_options(context);
    options.legacy_answer = shim::LegacyStartAnswer::kJsonVersion3;
    return options;
  }

  std::optional<shim::MountCapabilities> mount_capabilities(
      const std::optional<shim::pb::Any>&) const override {
    return shim::MountCapabilities{{"erofs"}, {"format"}};
  }
};

}  // namespace

int main(int argc, char** argv) {
  MountCapabilitiesManager manager;
  return shim::run(argc, argv, manager);
}
