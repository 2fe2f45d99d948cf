#include "support/action_context.h"

#include <memory>

namespace shim::test {

TestActionContext::TestActionContext(ShimIdentity identity, std::string_view action)
    : logger_(std::make_shared<CallbackLogSink>([this](std::string_view line) {
                std::lock_guard lock(mu_);
                lines_.emplace_back(line);
              }),
              clock_, LogLevel::kDebug),
      context_{action,      std::move(identity),   logger_,
               clock_,      environment_.reaper(), environment_.spawner(),
               std::nullopt} {}

std::vector<std::string> TestActionContext::lines() const {
  std::lock_guard lock(mu_);
  return lines_;
}

}  // namespace shim::test
