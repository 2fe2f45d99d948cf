// The sandbox service: the record, the keeper, CreateSandbox and the registration.
// StartSandbox, StopSandbox and ShutdownSandbox are in sandbox_lifecycle.cpp, the
// queries in sandbox_queries.cpp.
#include "sandbox/sandbox_service.h"

#include <signal.h>

#include "sandbox/sandbox_exit_reports.h"
#include "shim/logger.h"
#include "shim/process/call_deadline.h"
#include "shim/ttrpc/typed.h"

namespace shim {
namespace {

SandboxConfig config_of(const sandbox_api::CreateSandboxRequest& request) {
  SandboxConfig config;
  config.id = request.sandbox_id();
  config.bundle = request.bundle_path();
  config.rootfs.assign(request.rootfs().begin(), request.rootfs().end());
  if (request.has_options()) config.options = request.options();
  config.netns_path = request.netns_path();
  config.annotations.insert(request.annotations().begin(), request.annotations().end());
  return config;
}

// What CreateSandbox's pool work answers.
struct Created {
  Status status;
  std::shared_ptr<GuardedSandbox> sandbox;
};

}  // namespace

SandboxService::SandboxService(ServiceContext& context, std::unique_ptr<SandboxRuntime> runtime)
    : context_(context), runtime_(std::move(runtime)) {}

SandboxService::~SandboxService() { context_.shutdown.remove_keeper(kSandboxKeeper); }

Status SandboxService::find(const std::string& id, std::shared_ptr<SandboxRecord>* record) const {
  if (record_ == nullptr || record_->id != id) return not_found(fmt::format("sandbox {}", id));
  *record = record_;
  return {};
}

// A sandbox keeps the shim from CreateSandbox on, also while that create is under way:
// containerd's task Shutdown for a container of the pod must not end the pod's shim.
std::string SandboxService::why_kept() const {
  if (record_ == nullptr) return "";
  if (record_->sandbox == nullptr) return fmt::format("sandbox {} (create under way)", record_->id);
  return fmt::format("sandbox {}", record_->id);
}

void SandboxService::create(const CallInfo&, sandbox_api::CreateSandboxRequest request,
                            Reply<sandbox_api::CreateSandboxResponse> reply) {
  const std::string& id = request.sandbox_id();
  if (id.empty()) return reply.fail(invalid_argument("sandbox id must not be empty"));
  if (record_ != nullptr && record_->id == id) {
    return reply.fail(already_exists(fmt::format("sandbox {}", id)));
  }
  if (record_ != nullptr) {
    return reply.fail(failed_precondition(
        fmt::format("cannot create sandbox {}: this shim serves sandbox {} (one sandbox per shim)",
                    id, record_->id)));
  }
  auto record = std::make_shared<SandboxRecord>();
  record->id = id;
  record->bundle = request.bundle_path();
  record->netns_path = request.netns_path();
  record_ = record;
  context_.shutdown.set_keeper(std::string(kSandboxKeeper), [this] { return why_kept(); });
  std::shared_ptr<SandboxEvents> events = std::make_shared<SandboxExitReports>(
      context_.executor, context_.clock, context_.logger, record);
  auto config = std::make_shared<const SandboxConfig>(config_of(request));
  context_.logger.info("creating sandbox", {{"id", id}, {"bundle", record->bundle}});
  queue(record, reply, [this, record, reply, events, config](SerialOps::Finished finished) {
    auto work = [runtime = runtime_, config, events, &logger = context_.logger] {
      std::unique_ptr<GuardedSandbox> made;
      Created result;
      result.status = guarded_create(*runtime, *config, events, logger, &made);
      result.sandbox = std::move(made);
      return result;
    };
    on_pool<Created>(std::move(finished), work, [this, record, reply](Created result) {
      finish_create(record, result.status, std::move(result.sandbox));
      if (!result.status.ok()) return reply.fail(result.status);
      reply(sandbox_api::CreateSandboxResponse());
    });
  });
}

void SandboxService::finish_create(const std::shared_ptr<SandboxRecord>& record, Status created,
                                   std::shared_ptr<GuardedSandbox> sandbox) {
  if (!created.ok()) {
    context_.logger.warn("sandbox create failed",
                         {{"id", record->id}, {"error", created.message()}});
    remove(record);  // the id is free again, and nothing keeps the shim for it
    return;
  }
  record->sandbox = std::move(sandbox);
  record->created_at = context_.clock.now();
  context_.logger.info("sandbox created", {{"id", record->id}});
}

// Held waits get an exit (SIGKILL's 137, now, as containerd reports a process that was
// torn down) if the sandbox had none. The plug-in's sandbox is destroyed on the pool: its
// destructor may block (a VM's teardown).
void SandboxService::remove(const std::shared_ptr<SandboxRecord>& record) {
  record->removed = true;
  if (record->mark_exited(SandboxExit{128 + SIGKILL, context_.clock.now()})) {
    context_.logger.debug("sandbox removed before it exited", {{"id", record->id}});
  }
  if (record->sandbox != nullptr) {
    std::shared_ptr<GuardedSandbox> doomed = std::move(record->sandbox);
    // If the pool is stopping the job is dropped, and the sandbox with it, right here.
    context_.pool.post([doomed = std::move(doomed)]() mutable { doomed.reset(); });
  }
  if (record_ == record) {
    record_.reset();
    context_.shutdown.remove_keeper(kSandboxKeeper);
  }
}

namespace {

// Binds one RPC: decode Request, call the member, answer with Response.
template <class Request, class Response>
void bind(ttrpc::Router& router, std::string_view method, SandboxService& service,
          void (SandboxService::*member)(const ttrpc::CallInfo&, Request, ttrpc::Reply<Response>)) {
  router.add(kSandboxService, method,
             ttrpc::typed_handler<Request, Response>(
                 [&service, member](const ttrpc::CallInfo& call, Request request,
                                    ttrpc::Reply<Response> reply) {
                   CallDeadlineScope deadline(call.deadline);  // reaches the pool work it posts
                   (service.*member)(call, std::move(request), std::move(reply));
                 }));
}

}  // namespace

void register_sandbox_service(ttrpc::Router& router, SandboxService& service) {
  bind(router, "CreateSandbox", service, &SandboxService::create);
  bind(router, "StartSandbox", service, &SandboxService::start);
  bind(router, "Platform", service, &SandboxService::platform);
  bind(router, "StopSandbox", service, &SandboxService::stop);
  bind(router, "WaitSandbox", service, &SandboxService::wait);
  bind(router, "SandboxStatus", service, &SandboxService::status);
  bind(router, "PingSandbox", service, &SandboxService::ping);
  bind(router, "ShutdownSandbox", service, &SandboxService::shutdown);
  bind(router, "SandboxMetrics", service, &SandboxService::metrics);
}

}  // namespace shim
