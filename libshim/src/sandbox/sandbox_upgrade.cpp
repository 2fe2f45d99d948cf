// SandboxService's part in a live upgrade (shim/live_upgrade.h). Carrying a sandbox (its
// pod holder, namespaces and exits) across the exec is a later step of
// docs/live-upgrade.md; until then a shim serving one refuses.
#include "sandbox/sandbox_service.h"

namespace shim {

Status SandboxService::ready_for_upgrade() {
  if (record_ == nullptr) return {};
  return Status(Code::kFailedPrecondition,
                "live upgrade of a shim that serves a sandbox is not supported yet");
}

Status SandboxService::save_for_upgrade(boost::json::object* state, std::vector<int>*) {
  (*state)["sandbox"] = nullptr;
  return {};
}

Status SandboxService::restore_after_upgrade(const boost::json::object& state) {
  const auto* sandbox = state.if_contains("sandbox");
  if (sandbox == nullptr || !sandbox->is_null()) {
    return Status(Code::kFailedPrecondition,
                  "the upgrade state has a sandbox; this program restores none");
  }
  return {};
}

}  // namespace shim
