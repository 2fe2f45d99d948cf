#include "shim/shutdown_control.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/vendor_call.h"

namespace shim {

std::string ShutdownControl::shutdown_if_unused() {
  std::string reason = why_kept();
  if (reason.empty()) when_unused();
  return reason;
}

std::string ShutdownControl::why_kept() {
  // Not a structured binding: clang 14 (the sanitizer build) cannot capture one.
  for (const auto& entry : keepers_) {
    const std::string& name = entry.first;
    const Keeper& keeper = entry.second;
    std::string reason;
    Status asked = vendor_call(fmt::format("shutdown keeper {}", name), [&] {
      reason = keeper();
      return Status();
    });
    if (!asked.ok()) reason = asked.message();
    if (!reason.empty()) return fmt::format("{}: {}", name, reason);
  }
  return "";
}

void ShutdownControl::set_keeper(std::string name, Keeper keeper) {
  auto same = [&](const auto& entry) { return entry.first == name; };
  auto it = std::find_if(keepers_.begin(), keepers_.end(), same);
  if (it != keepers_.end()) {
    it->second = std::move(keeper);
    return;
  }
  keepers_.emplace_back(std::move(name), std::move(keeper));
}

void ShutdownControl::remove_keeper(std::string_view name) {
  std::erase_if(keepers_, [&](const auto& entry) { return entry.first == name; });
}

}  // namespace shim
