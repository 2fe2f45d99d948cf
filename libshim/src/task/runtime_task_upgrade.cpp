// RuntimeTaskService's part in a live upgrade (shim/live_upgrade.h). Carrying containers
// across the exec (their processes, stdio copies, exits, Waits and the runtime's Instance
// state) is the next step of docs/live-upgrade.md; until then a shim that has any
// container refuses, and the old program serves on unchanged.
#include <fmt/format.h>

#include "task/runtime_task_service.h"

namespace shim {

Status RuntimeTaskService::ready_for_upgrade() {
  const std::size_t count = containers_.size() + creating_.size();
  if (count == 0) return {};
  return Status(Code::kFailedPrecondition,
                fmt::format("live upgrade of a shim that has containers is not supported yet "
                            "(libshim {}): this shim has {}",
                            LIBSHIM_VERSION, count));
}

Status RuntimeTaskService::save_for_upgrade(boost::json::object* state, std::vector<int>*) {
  (*state)["containers"] = boost::json::array();
  return {};
}

Status RuntimeTaskService::restore_after_upgrade(const boost::json::object& state) {
  const auto* containers = state.if_contains("containers");
  if (containers == nullptr || !containers->is_array() || !containers->as_array().empty()) {
    return Status(Code::kFailedPrecondition,
                  "the upgrade state has containers; this program restores none");
  }
  return {};
}

}  // namespace shim
