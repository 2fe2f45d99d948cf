// containerd-shim-sandbox-v1: the shim over runc (shim/oci/cli_manager.h) that also runs
// its pods itself (shim/sandbox.h), for tests/integration/sandbox_shim_e2e_test.cpp. Its
// sandbox is the smallest there is: nothing to boot, the shim's own process stands for
// the pod (the pid StartSandbox answers, a live process of the host's pid namespace), and
// stop ends nothing but answers exit status 0.
#include <unistd.h>

#include <memory>

#include "shim/oci/cli_manager.h"
#include "shim/sandbox.h"

namespace {

class ShimProcessSandbox final : public shim::Sandbox {
 public:
  shim::Status start(shim::SandboxStarted* started) override {
    started->pid = static_cast<std::uint32_t>(::getpid());
    return {};
  }
  shim::Status stop(std::chrono::seconds, std::uint32_t* exit_status) override {
    *exit_status = 0;
    return {};
  }
  shim::Status shutdown() override { return {}; }
  shim::Status details(boost::json::object* info) const override {
    (*info)["holder"] = "shim";
    return {};
  }
};

class ShimProcessSandboxRuntime final : public shim::SandboxRuntime {
 public:
  shim::Status create(const shim::SandboxConfig&, shim::SandboxEvents&,
                      std::unique_ptr<shim::Sandbox>* sandbox) override {
    *sandbox = std::make_unique<ShimProcessSandbox>();
    return {};
  }
};

class SandboxManager final : public shim::oci::CliManager {
 public:
  SandboxManager() : CliManager("io.containerd.sandboxtest.v1", "runc") {}

  std::unique_ptr<shim::SandboxRuntime> create_sandbox_runtime(shim::ServiceContext&) override {
    return std::make_unique<ShimProcessSandboxRuntime>();
  }
};

}  // namespace

int main(int argc, char** argv) {
  SandboxManager manager;
  return shim::run(argc, argv, manager);
}
