#include "sandbox/guarded_sandbox.h"

#include "common/vendor_call.h"

namespace shim {

GuardedSandbox::GuardedSandbox(std::unique_ptr<Sandbox> sandbox,
                               std::shared_ptr<SandboxEvents> events, Logger& logger,
                               std::string id)
    : events_(std::move(events)),
      sandbox_(std::move(sandbox)),
      logger_(logger),
      id_(std::move(id)) {}

template <class Call>
Status GuardedSandbox::guard(std::string_view method, Call&& call) const {
  return vendor_call(method, std::forward<Call>(call), &logger_, id_);
}

Status GuardedSandbox::start(SandboxStarted* started) {
  return guard("Sandbox::start", [&] { return sandbox_->start(started); });
}

Status GuardedSandbox::stop(std::chrono::seconds timeout, std::uint32_t* exit_status) {
  return guard("Sandbox::stop", [&] { return sandbox_->stop(timeout, exit_status); });
}

Status GuardedSandbox::shutdown() {
  return guard("Sandbox::shutdown", [&] { return sandbox_->shutdown(); });
}

Status GuardedSandbox::platform(containerd::types::Platform* platform) const {
  return guard("Sandbox::platform", [&] { return sandbox_->platform(platform); });
}

Status GuardedSandbox::metrics(containerd::types::Metric* metric) {
  return guard("Sandbox::metrics", [&] { return sandbox_->metrics(metric); });
}

Status GuardedSandbox::details(boost::json::object* info) const {
  return guard("Sandbox::details", [&] { return sandbox_->details(info); });
}

Status GuardedSandbox::save_for_upgrade(boost::json::object* state, std::vector<int>* fds) {
  return guard("Sandbox::save_for_upgrade", [&] { return sandbox_->save_for_upgrade(state, fds); });
}

Status guarded_reopen(SandboxRuntime& runtime, const SandboxConfig& config,
                      const boost::json::object& saved,
                      const std::shared_ptr<SandboxEvents>& events, Logger& logger,
                      std::unique_ptr<GuardedSandbox>* sandbox) {
  std::unique_ptr<Sandbox> made;
  Status reopened = vendor_call(
      "SandboxRuntime::reopen", [&] { return runtime.reopen(config, saved, *events, &made); },
      &logger, config.id);
  if (!reopened.ok()) return reopened;
  if (made == nullptr) return Status(Code::kInternal, "SandboxRuntime::reopen made no sandbox");
  *sandbox = std::make_unique<GuardedSandbox>(std::move(made), events, logger, config.id);
  return {};
}

Status guarded_create(SandboxRuntime& runtime, const SandboxConfig& config,
                      const std::shared_ptr<SandboxEvents>& events, Logger& logger,
                      std::unique_ptr<GuardedSandbox>* sandbox) {
  std::unique_ptr<Sandbox> made;
  Status created = vendor_call(
      "SandboxRuntime::create", [&] { return runtime.create(config, *events, &made); }, &logger,
      config.id);
  if (created.ok() && made == nullptr) {
    return Status(Code::kInternal, "SandboxRuntime::create made no sandbox");
  }
  if (made == nullptr) return created;
  auto guarded = std::make_unique<GuardedSandbox>(std::move(made), events, logger, config.id);
  if (created.ok()) {
    *sandbox = std::move(guarded);
    return {};
  }
  if (Status s = guarded->shutdown(); !s.ok()) {
    logger.warn("shutdown of a sandbox whose create failed",
                {{"id", config.id}, {"error", s.message()}});
  }
  return created;
}

}  // namespace shim
