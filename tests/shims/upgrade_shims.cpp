// Two shims for tests/integration/live_upgrade_test.cpp, both libshim's runc shim
// (shim/oci/cli_manager.h) under containerd-shim-runc-v2's runtime name:
//   containerd-shim-upgrade-next-v1     another build: its version says "upgrade-next"
//   containerd-shim-upgrade-refusing-v1 a program that refuses every upgrade state it is
//                                       handed (as a build whose format changed would):
//                                       the old program must take over again
// Which one is built is LIBSHIM_UPGRADE_REFUSING (0 or 1).
#include <memory>

#include "shim/live_upgrade.h"
#include "shim/manager.h"
#include "shim/oci/cli_manager.h"
#include "shim/task_service.h"

namespace {

// A task service whose live-upgrade state never restores.
class RefusingTasks final : public shim::TaskService, public shim::UpgradeParticipant {
 public:
  shim::UpgradeParticipant* upgrade_participant() override { return this; }
  std::string_view upgrade_key() const override { return "tasks"; }
  shim::Status ready_for_upgrade() override { return {}; }
  shim::Status save_for_upgrade(boost::json::object*, std::vector<int>*) override { return {}; }
  shim::Status restore_after_upgrade(const boost::json::object&) override {
    return shim::Status(shim::Code::kFailedPrecondition,
                        "this test shim refuses every upgrade state");
  }
};

#if LIBSHIM_UPGRADE_REFUSING
// No runtime: it never serves a container, only refuses the state.
class UpgradeTestManager final : public shim::Manager {
 public:
  std::string name() const override { return "io.containerd.runc.v2"; }
  std::string version() const override { return "upgrade-refusing"; }
  shim::Status stop(const shim::ActionContext&, shim::task::DeleteResponse*) override { return {}; }
  std::unique_ptr<shim::TaskService> create_task_service(shim::ServiceContext&) override {
    return std::make_unique<RefusingTasks>();
  }
};
#else
class UpgradeTestManager final : public shim::oci::CliManager {
 public:
  UpgradeTestManager() : CliManager("io.containerd.runc.v2", "runc") {}
  std::string version() const override { return "upgrade-next"; }
};
#endif

}  // namespace

int main(int argc, char** argv) {
  UpgradeTestManager manager;
  return shim::run(argc, argv, manager);
}
