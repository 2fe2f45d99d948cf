// What the short-lived actions (`delete`, `-info`) build for the plug-in: a clock, a
// logger on stderr, a reaper and spawner of their own (shim/process/action_environment.h),
// and the ActionContext that hands them over. Construct it on the action's main thread
// before any other thread exists (the environment blocks SIGCHLD there).
#pragma once

#include <string_view>

#include "shim/action_context.h"
#include "shim/clock.h"
#include "shim/logger.h"
#include "shim/process/action_environment.h"

namespace shim::detail {

class ActionSetting {
 public:
  // `deadline`: the ActionContext's (shim/action_context.h).
  ActionSetting(std::string_view action, ShimIdentity identity,
                CallDeadline deadline = std::nullopt);
  ActionSetting(const ActionSetting&) = delete;
  ActionSetting& operator=(const ActionSetting&) = delete;

  ActionContext& context() { return context_; }
  // Whether the reaper runs; the action fails with this error otherwise.
  Status status() const { return environment_.status(); }

 private:
  SystemClock clock_;
  Logger logger_;
  ActionEnvironment environment_;
  ActionContext context_;
};

}  // namespace shim::detail
