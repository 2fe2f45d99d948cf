// GuardedSandbox: the plug-in's Sandbox as the sandbox service calls it. Every method
// answers a Status whatever the plug-in does: an exception becomes Internal
// "Sandbox::<method> threw: <what>", logged with the sandbox id (common/vendor_call.h),
// and the service treats it as any failed call.
//
// Threading: as shim::Sandbox (the pool, one call at a time per sandbox: the service's
// SerialOps queue orders them).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shim/logger.h"
#include "shim/sandbox.h"

namespace shim {

class GuardedSandbox {
 public:
  // Guards `sandbox` (the plug-in's, non-null) of sandbox `id`; `logger` outlives it.
  // `events` is the SandboxEvents it was created with, kept alive as long as the sandbox
  // (shim/sandbox.h promises it outlives the sandbox).
  GuardedSandbox(std::unique_ptr<Sandbox> sandbox, std::shared_ptr<SandboxEvents> events,
                 Logger& logger, std::string id);

  Status start(SandboxStarted* started);
  Status stop(std::chrono::seconds timeout, std::uint32_t* exit_status);
  Status shutdown();
  Status platform(containerd::types::Platform* platform) const;
  Status metrics(containerd::types::Metric* metric);
  Status details(boost::json::object* info) const;
  Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds);

 private:
  template <class Call>
  Status guard(std::string_view method, Call&& call) const;

  std::shared_ptr<SandboxEvents> events_;  // before sandbox_: destroyed after it
  std::unique_ptr<Sandbox> sandbox_;
  Logger& logger_;
  std::string id_;
};

// SandboxRuntime::create behind the same guard, its sandbox guarded: an exception or a
// success without a sandbox is Internal. When create fails but made a sandbox anyway, that
// sandbox's shutdown() runs here (its failure is logged) and it is dropped: containerd never learns
// of a sandbox whose create failed.
Status guarded_create(SandboxRuntime& runtime, const SandboxConfig& config,
                      const std::shared_ptr<SandboxEvents>& events, Logger& logger,
                      std::unique_ptr<GuardedSandbox>* sandbox);

// SandboxRuntime::reopen behind the same guard (a live upgrade's new program).
Status guarded_reopen(SandboxRuntime& runtime, const SandboxConfig& config,
                      const boost::json::object& saved,
                      const std::shared_ptr<SandboxEvents>& events, Logger& logger,
                      std::unique_ptr<GuardedSandbox>* sandbox);

}  // namespace shim
