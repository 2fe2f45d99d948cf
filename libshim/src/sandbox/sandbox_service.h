// SandboxService: containerd.runtime.sandbox.v1.Sandbox over the plug-in's SandboxRuntime
// (shim/sandbox.h), served on the task socket next to the task API. The semantics follow
// what containerd 2.x's shim-mode controller and CRI expect of it
// (plugins/sandbox/controller.go, internal/cri/server/sandbox_*.go):
//
//   * One sandbox per shim. CreateSandbox of the id it serves: AlreadyExists; of another
//     id: FailedPrecondition naming both. Any other call for an id it does not serve:
//     NotFound "sandbox <id>: not found" (CRI reads NotFound as "the shim is gone").
//   * Vendor calls (create, start, stop, shutdown, platform, metrics, details) run on the
//     pool, one at a time per sandbox in arrival order; a failing Status is answered as it
//     is, an exception as Internal "<Class>::<method> threw: <what>".
//   * State: READY from a successful StartSandbox until the sandbox exits (StopSandbox or
//     SandboxEvents::exited), NOTREADY before and after. SandboxStatus (not verbose),
//     WaitSandbox and PingSandbox answer from the loop, never waiting for a vendor call.
//   * StopSandbox of an exited sandbox: OK, no vendor call. Before StartSandbox: OK, no
//     vendor call (nothing runs yet); the sandbox is then exited with status 0.
//   * ShutdownSandbox: Sandbox::shutdown in whatever state; then the sandbox is gone, held
//     WaitSandbox calls are answered (137, now, if it had not exited) and the shim ends if
//     no other keeper (the task tier's containers) holds it. With no sandbox here at all
//     (its create failed, or a second ShutdownSandbox) it answers OK and does the same:
//     containerd's controller sends it after a failed create and start, and then only
//     closes its connection, so the shim must end by itself. A failed shutdown keeps the
//     sandbox, so that containerd's retry calls it again.
//   * The shim's lifetime: while a sandbox exists (from CreateSandbox), the keeper
//     "sandbox" keeps the shim through the task API's Shutdown (shim/shutdown_control.h).
//
// Threading: every method on the event loop.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "sandbox/sandbox_record.h"
#include "shim/live_upgrade.h"
#include "shim/process/work_pool.h"
#include "shim/sandbox.h"
#include "shim/service_context.h"
#include "shim/ttrpc/router.h"

namespace shim {

inline constexpr std::string_view kSandboxService = "containerd.runtime.sandbox.v1.Sandbox";

class SandboxService final : public UpgradeParticipant {
 public:
  // The name of this service's keeper in ShutdownControl.
  static constexpr std::string_view kSandboxKeeper = "sandbox";

  // Serves `runtime` (non-null); `context` outlives this.
  SandboxService(ServiceContext& context, std::unique_ptr<SandboxRuntime> runtime);
  ~SandboxService();  // removes the keeper
  SandboxService(const SandboxService&) = delete;
  SandboxService& operator=(const SandboxService&) = delete;

  using CallInfo = ttrpc::CallInfo;
  template <class Response>
  using Reply = ttrpc::Reply<Response>;

  // Live upgrade (sandbox_upgrade.cpp): the record and the plug-in's state
  // (Sandbox::save_for_upgrade, SandboxRuntime::reopen); not while a call of the sandbox
  // runs or its create is under way (Unavailable).
  std::string_view upgrade_key() const override { return "sandboxes"; }
  Status ready_for_upgrade() override;
  Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds) override;
  Status restore_after_upgrade(const boost::json::object& state) override;

  void create(const CallInfo& call, sandbox_api::CreateSandboxRequest request,
              Reply<sandbox_api::CreateSandboxResponse> reply);
  void start(const CallInfo& call, sandbox_api::StartSandboxRequest request,
             Reply<sandbox_api::StartSandboxResponse> reply);
  void platform(const CallInfo& call, sandbox_api::PlatformRequest request,
                Reply<sandbox_api::PlatformResponse> reply);
  void stop(const CallInfo& call, sandbox_api::StopSandboxRequest request,
            Reply<sandbox_api::StopSandboxResponse> reply);
  void wait(const CallInfo& call, sandbox_api::WaitSandboxRequest request,
            Reply<sandbox_api::WaitSandboxResponse> reply);
  void status(const CallInfo& call, sandbox_api::SandboxStatusRequest request,
              Reply<sandbox_api::SandboxStatusResponse> reply);
  void ping(const CallInfo& call, sandbox_api::PingRequest request,
            Reply<sandbox_api::PingResponse> reply);
  void shutdown(const CallInfo& call, sandbox_api::ShutdownSandboxRequest request,
                Reply<sandbox_api::ShutdownSandboxResponse> reply);
  void metrics(const CallInfo& call, sandbox_api::SandboxMetricsRequest request,
               Reply<sandbox_api::SandboxMetricsResponse> reply);

 private:
  // The record of sandbox `id`, or NotFound "sandbox <id>: not found".
  Status find(const std::string& id, std::shared_ptr<SandboxRecord>* record) const;
  // Why the sandbox keeps the shim ("" if there is none): the keeper.
  std::string why_kept() const;
  // Queues `turn` behind the record's vendor calls. At its turn a record that was removed
  // meanwhile answers `reply` NotFound instead; otherwise `turn(finished)` runs and
  // calls `finished` once its answer went out.
  template <class Response, class Turn>
  void queue(const std::shared_ptr<SandboxRecord>& record, const Reply<Response>& reply, Turn turn);
  // Runs `work` on the pool, then `done(result)` and `finished` on the loop; if the pool
  // is stopping, `done` gets Unavailable.
  template <class Result, class Work, class Done>
  void on_pool(SerialOps::Finished finished, Work work, Done done);

  void finish_create(const std::shared_ptr<SandboxRecord>& record, Status created,
                     std::shared_ptr<GuardedSandbox> sandbox);
  void run_start(const std::shared_ptr<SandboxRecord>& record,
                 const Reply<sandbox_api::StartSandboxResponse>& reply,
                 SerialOps::Finished finished);
  void run_stop(const std::shared_ptr<SandboxRecord>& record, std::chrono::seconds timeout,
                const Reply<sandbox_api::StopSandboxResponse>& reply, SerialOps::Finished finished);
  void run_shutdown(const std::shared_ptr<SandboxRecord>& record,
                    const Reply<sandbox_api::ShutdownSandboxResponse>& reply,
                    SerialOps::Finished finished);
  // The sandbox is gone: held waits answered, the keeper removed.
  void remove(const std::shared_ptr<SandboxRecord>& record);
  // Answers ShutdownSandbox OK, then lets the shim end if nothing else keeps it.
  void shutdown_done(const Reply<sandbox_api::ShutdownSandboxResponse>& reply);

  ServiceContext& context_;
  std::shared_ptr<SandboxRuntime> runtime_;  // shared with the create under way
  std::shared_ptr<SandboxRecord> record_;    // the one sandbox, or null
  std::string shut_down_id_;                 // the sandbox ShutdownSandbox removed, if any
};

template <class Response, class Turn>
void SandboxService::queue(const std::shared_ptr<SandboxRecord>& record,
                           const Reply<Response>& reply, Turn turn) {
  record->ops->enqueue([record, reply, turn = std::move(turn)](SerialOps::Finished finished) {
    if (record->removed) {
      reply.fail(not_found(fmt::format("sandbox {}", record->id)));
      return finished();
    }
    turn(std::move(finished));
  });
}

template <class Result, class Work, class Done>
void SandboxService::on_pool(SerialOps::Finished finished, Work work, Done done) {
  auto reply = [done, finished](Result result) mutable {
    done(std::move(result));
    finished();
  };
  if (!post_and_reply(context_.pool, context_.executor, std::move(work), reply)) {
    reply(result_with_status<Result>(unavailable("shim is shutting down")));
  }
}

// Registers `service`'s nine RPCs on `router` as containerd.runtime.sandbox.v1.Sandbox.
// `service` must outlive the server.
void register_sandbox_service(ttrpc::Router& router, SandboxService& service);

}  // namespace shim
