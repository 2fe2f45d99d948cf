#include "protocol/action_setting.h"

#include <unistd.h>

#include <memory>

namespace shim::detail {

// No default fields: containerd prefixes the lines it logs with the task's own.
ActionSetting::ActionSetting(std::string_view action, ShimIdentity identity, CallDeadline deadline)
    : logger_(std::make_shared<FdLogSink>(STDERR_FILENO), clock_,
              identity.debug ? LogLevel::kDebug : LogLevel::kInfo),
      context_{action,  std::move(identity),   logger_,
               clock_,  environment_.reaper(), environment_.spawner(),
               deadline} {}

}  // namespace shim::detail
