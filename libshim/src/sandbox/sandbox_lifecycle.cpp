// StartSandbox, StopSandbox and ShutdownSandbox: the calls that change a sandbox's state
// (sandbox/sandbox_service.h has the rules).
#include <utility>

#include "sandbox/sandbox_service.h"
#include "shim/logger.h"
#include "shim/timestamp.h"

namespace shim {
namespace {

struct Started {
  Status status;
  SandboxStarted started;
};

struct Stopped {
  Status status;
  std::uint32_t exit_status = 0;
};

}  // namespace

void SandboxService::start(const CallInfo&, sandbox_api::StartSandboxRequest request,
                           Reply<sandbox_api::StartSandboxResponse> reply) {
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  queue(record, reply, [this, record, reply](SerialOps::Finished finished) {
    run_start(record, reply, std::move(finished));
  });
}

void SandboxService::run_start(const std::shared_ptr<SandboxRecord>& record,
                               const Reply<sandbox_api::StartSandboxResponse>& reply,
                               SerialOps::Finished finished) {
  // Sandbox::start is called once (shim/sandbox.h); containerd starts a sandbox once.
  if (record->started_at) {
    reply.fail(failed_precondition(fmt::format("sandbox {} already started", record->id)));
    return finished();
  }
  if (record->exit) {
    reply.fail(failed_precondition(fmt::format("sandbox {} is stopped", record->id)));
    return finished();
  }
  auto work = [sandbox = record->sandbox] {
    Started result;
    result.status = sandbox->start(&result.started);
    return result;
  };
  on_pool<Started>(std::move(finished), work, [this, record, reply](Started result) {
    if (!result.status.ok()) {
      context_.logger.warn("sandbox start failed",
                           {{"id", record->id}, {"error", result.status.message()}});
      return reply.fail(result.status);
    }
    record->pid = result.started.pid;
    record->started_at = context_.clock.now();
    sandbox_api::StartSandboxResponse response;
    response.set_pid(record->pid);
    *response.mutable_created_at() = to_timestamp(*record->started_at);
    if (result.started.spec) *response.mutable_spec() = std::move(*result.started.spec);
    context_.logger.info("sandbox started", {{"id", record->id}, {"pid", record->pid}});
    reply(response);
  });
}

void SandboxService::stop(const CallInfo&, sandbox_api::StopSandboxRequest request,
                          Reply<sandbox_api::StopSandboxResponse> reply) {
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  const std::chrono::seconds timeout(request.timeout_secs());
  queue(record, reply, [this, record, timeout, reply](SerialOps::Finished finished) {
    run_stop(record, timeout, reply, std::move(finished));
  });
}

// Idempotent, as CRI's StopPodSandbox is retried: an exited sandbox answers OK at once.
// Before StartSandbox nothing of the sandbox runs, so it only turns exited (status 0);
// its shutdown() later releases what create prepared.
void SandboxService::run_stop(const std::shared_ptr<SandboxRecord>& record,
                              std::chrono::seconds timeout,
                              const Reply<sandbox_api::StopSandboxResponse>& reply,
                              SerialOps::Finished finished) {
  if (!record->exit && !record->started_at) {
    if (record->mark_exited(SandboxExit{0, context_.clock.now()})) {
      context_.logger.info("sandbox stopped before it started", {{"id", record->id}});
    }
  }
  if (record->exit) {
    reply(sandbox_api::StopSandboxResponse());
    return finished();
  }
  auto work = [sandbox = record->sandbox, timeout] {
    Stopped result;
    result.status = sandbox->stop(timeout, &result.exit_status);
    return result;
  };
  on_pool<Stopped>(std::move(finished), work, [this, record, reply](Stopped result) {
    if (!result.status.ok()) {
      context_.logger.warn("sandbox stop failed",
                           {{"id", record->id}, {"error", result.status.message()}});
      return reply.fail(result.status);
    }
    // An exit the sandbox reported while stop ran came first and stays.
    if (record->mark_exited(SandboxExit{result.exit_status, context_.clock.now()})) {
      context_.logger.info("sandbox stopped",
                           {{"id", record->id}, {"exit_status", result.exit_status}});
    }
    reply(sandbox_api::StopSandboxResponse());
  });
}

void SandboxService::shutdown(const CallInfo&, sandbox_api::ShutdownSandboxRequest request,
                              Reply<sandbox_api::ShutdownSandboxResponse> reply) {
  // No sandbox here at all: its create failed (containerd's controller sends this then,
  // cleanupShim) or it was shut down already. OK, and the shim may end.
  if (record_ == nullptr) return shutdown_done(reply);
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  record->ops->enqueue([this, record, reply](SerialOps::Finished finished) {
    if (record->removed) {  // the create it queued behind failed
      shutdown_done(reply);
      return finished();
    }
    run_shutdown(record, reply, std::move(finished));
  });
}

void SandboxService::run_shutdown(const std::shared_ptr<SandboxRecord>& record,
                                  const Reply<sandbox_api::ShutdownSandboxResponse>& reply,
                                  SerialOps::Finished finished) {
  auto work = [sandbox = record->sandbox] { return sandbox->shutdown(); };
  on_pool<Status>(std::move(finished), work, [this, record, reply](Status status) {
    if (!status.ok()) {
      // The sandbox stays (and keeps the shim): containerd's CRI retries the removal.
      context_.logger.warn("sandbox shutdown failed",
                           {{"id", record->id}, {"error", status.message()}});
      return reply.fail(status);
    }
    context_.logger.info("sandbox shut down", {{"id", record->id}});
    shut_down_id_ = record->id;
    remove(record);
    shutdown_done(reply);
  });
}

// The reply goes out before the shutdown sequence closes the connection (as the task
// tier's Shutdown does). containerd's controller only closes its client after this, so
// the shim ends here unless a task of the pod is still there; then that task's own
// Shutdown ends it (shim/shutdown_control.h).
void SandboxService::shutdown_done(const Reply<sandbox_api::ShutdownSandboxResponse>& reply) {
  reply(sandbox_api::ShutdownSandboxResponse());
  std::string kept = context_.shutdown.shutdown_if_unused();
  if (!kept.empty()) context_.logger.debug("shutdown sandbox: shim kept", {{"by", kept}});
}

}  // namespace shim
