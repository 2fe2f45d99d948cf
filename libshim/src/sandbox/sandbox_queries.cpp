// The sandbox service's queries: SandboxStatus, WaitSandbox, PingSandbox (from the loop's
// state) and Platform, SandboxMetrics (the plug-in's answers, on the pool).
#include <utility>

#include "sandbox/sandbox_service.h"
#include "sandbox/sandbox_status.h"
#include "shim/timestamp.h"

namespace shim {
namespace {

struct Detailed {
  Status status;
  boost::json::object details;
};

struct Platformed {
  Status status;
  containerd::types::Platform platform;
};

struct Measured {
  Status status;
  containerd::types::Metric metric;
};

}  // namespace

// Not verbose (before every container create, at containerd's restart): the loop's state,
// at once. Verbose (crictl inspectp) adds the plug-in's details(), which waits for the
// sandbox's turn like any vendor call.
void SandboxService::status(const CallInfo&, sandbox_api::SandboxStatusRequest request,
                            Reply<sandbox_api::SandboxStatusResponse> reply) {
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  if (!request.verbose()) return reply(status_response(*record));
  queue(record, reply, [this, record, reply](SerialOps::Finished finished) {
    auto work = [sandbox = record->sandbox] {
      Detailed result;
      result.status = sandbox->details(&result.details);
      return result;
    };
    on_pool<Detailed>(std::move(finished), work, [record, reply](Detailed result) {
      if (!result.status.ok()) return reply.fail(result.status);
      sandbox_api::SandboxStatusResponse response = status_response(*record);
      (*response.mutable_info())["info"] = info_json(*record, std::move(result.details));
      reply(response);
    });
  });
}

// Held without a thread until the sandbox exits; answered at once if it has.
void SandboxService::wait(const CallInfo&, sandbox_api::WaitSandboxRequest request,
                          Reply<sandbox_api::WaitSandboxResponse> reply) {
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  record->wait(std::move(reply));
}

void SandboxService::ping(const CallInfo&, sandbox_api::PingRequest request,
                          Reply<sandbox_api::PingResponse> reply) {
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  reply(sandbox_api::PingResponse());
}

void SandboxService::platform(const CallInfo&, sandbox_api::PlatformRequest request,
                              Reply<sandbox_api::PlatformResponse> reply) {
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  queue(record, reply, [this, record, reply](SerialOps::Finished finished) {
    auto work = [sandbox = record->sandbox] {
      Platformed result;
      result.status = sandbox->platform(&result.platform);
      return result;
    };
    on_pool<Platformed>(std::move(finished), work, [reply](Platformed result) {
      if (!result.status.ok()) return reply.fail(result.status);
      sandbox_api::PlatformResponse response;
      *response.mutable_platform() = std::move(result.platform);
      reply(response);
    });
  });
}

// containerd 2.4's CRI pod stats read the metric's data; id and timestamp are filled in
// when the plug-in left them empty.
void SandboxService::metrics(const CallInfo&, sandbox_api::SandboxMetricsRequest request,
                             Reply<sandbox_api::SandboxMetricsResponse> reply) {
  std::shared_ptr<SandboxRecord> record;
  if (Status s = find(request.sandbox_id(), &record); !s.ok()) return reply.fail(s);
  queue(record, reply, [this, record, reply](SerialOps::Finished finished) {
    auto work = [sandbox = record->sandbox] {
      Measured result;
      result.status = sandbox->metrics(&result.metric);
      return result;
    };
    on_pool<Measured>(std::move(finished), work, [this, record, reply](Measured result) {
      if (!result.status.ok()) return reply.fail(result.status);
      if (result.metric.id().empty()) result.metric.set_id(record->id);
      if (!result.metric.has_timestamp()) {
        *result.metric.mutable_timestamp() = to_timestamp(context_.clock.now());
      }
      sandbox_api::SandboxMetricsResponse response;
      *response.mutable_metrics() = std::move(result.metric);
      reply(response);
    });
  });
}

}  // namespace shim
