#include "upgrade/live_upgrade.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "common/vendor_call.h"
#include "shim/pb/containerd/types.pb.h"
#include "shim/process/run_command.h"
#include "upgrade/upgrade_support.h"

namespace shim::upgrade {

namespace json = boost::json;

std::optional<Incoming> take_incoming() {
  Incoming incoming;
  incoming.state_fd = int_env(kStateFdEnv);
  incoming.old_exe_fd = int_env(kOldExeFdEnv);
  if (const char* refused = std::getenv(kRefusedEnv)) incoming.refused = refused;
  ::unsetenv(kStateFdEnv);
  ::unsetenv(kOldExeFdEnv);
  ::unsetenv(kRefusedEnv);
  if (incoming.state_fd < 0) return std::nullopt;
  return incoming;
}

LiveUpgrade::LiveUpgrade(UpgradeSetup setup) : setup_(std::move(setup)), timer_(setup_.executor) {}

void LiveUpgrade::register_on(ttrpc::Router& router) {
  router.add(kUpgradeService, kReplaceMethod,
             ttrpc::typed_handler<pb::upgrade::ReplaceRequest, pb::upgrade::ReplaceResponse>(
                 [this](const ttrpc::CallInfo& call, pb::upgrade::ReplaceRequest request,
                        ttrpc::Reply<pb::upgrade::ReplaceResponse> reply) {
                   replace(call, std::move(request), std::move(reply));
                 }));
}

void LiveUpgrade::replace(const ttrpc::CallInfo& call, pb::upgrade::ReplaceRequest request,
                          ttrpc::Reply<pb::upgrade::ReplaceResponse> reply) {
  if (busy_) return reply.fail(Status(Code::kUnavailable, "a live upgrade is already under way"));
  if (!setup_.refusals.empty()) {
    return reply.fail(Status(
        Code::kFailedPrecondition,
        fmt::format("this shim cannot be upgraded live: {}", fmt::join(setup_.refusals, "; "))));
  }
  const std::string& binary = request.binary();
  if (binary.empty() || binary.front() != '/') {
    return reply.fail(Status(Code::kInvalidArgument,
                             fmt::format("upgrade binary \"{}\" is not an absolute path", binary)));
  }
  if (::access(binary.c_str(), X_OK) != 0) {
    return reply.fail(Status(Code::kFailedPrecondition,
                             fmt::format("upgrade binary {}: {}", binary, std::strerror(errno))));
  }
  busy_ = true;
  pending_ = Pending{call.stream_id, binary, std::move(reply)};
  setup_.logger->info("live upgrade requested", {{"binary", binary}});
  bool posted = post_and_reply(
      *setup_.pool, setup_.executor, [this, binary] { return probe(binary); },
      [this](Status probed) {
        if (!probed.ok()) return resume(probed);
        quiesce();
      });
  if (!posted) resume(Status(Code::kUnavailable, "the shim's work pool is stopping"));
}

// The new binary must start and read our state format: a binary that crashes at once or
// reads another format is refused here, while the old program still runs.
Status LiveUpgrade::probe(const std::string& binary) const {
  SpawnRequest request;
  request.path = binary;
  request.argv = {binary, "-info"};
  CaptureOptions options;
  options.timeout = kProbeTimeout;
  CaptureResult result;
  Status ran = run_and_capture(*setup_.reaper, *setup_.spawner, request, options, &result);
  if (!ran.ok()) return Status(ran.code(), fmt::format("{} -info: {}", binary, ran.message()));
  if (result.exit.status != 0) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("{} -info exited with status {}: {}", binary, result.exit.status,
                              result.err.substr(0, 512)));
  }
  containerd::types::RuntimeInfo info;
  if (!info.ParseFromString(result.out)) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("{} -info printed no RuntimeInfo", binary));
  }
  auto it = info.annotations().find(std::string(kStateFormatsAnnotation));
  std::string formats = it == info.annotations().end() ? "" : it->second;
  std::string ours = std::to_string(kStateFormat);
  for (std::string_view rest = formats; !rest.empty();) {
    std::size_t comma = rest.find(',');
    if (rest.substr(0, comma) == ours) return {};
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  return Status(Code::kFailedPrecondition,
                fmt::format("{} reads upgrade state formats \"{}\", this shim writes format {}",
                            binary, formats, kStateFormat));
}

void LiveUpgrade::quiesce() {
  if (server_ == nullptr) return resume(Status(Code::kInternal, "no server attached"));
  server_->suspend_input();
  setup_.forwarder->hold();
  deadline_ = std::chrono::steady_clock::now() + kQuiesceTimeout;
  quiesce_step();
}

Status LiveUpgrade::quiet() const {
  if (!server_->replies_written()) return Status(Code::kUnavailable, "replies are being written");
  if (!setup_.forwarder->idle()) return Status(Code::kUnavailable, "an event is being forwarded");
  if (setup_.exits_delivered && !setup_.exits_delivered())
    return Status(Code::kUnavailable, "an exit is being delivered");
  for (UpgradeParticipant* participant : setup_.participants) {
    Status ready = vendor_call(fmt::format("{}::ready_for_upgrade", participant->upgrade_key()),
                               [&] { return participant->ready_for_upgrade(); });
    if (!ready.ok()) return ready;
  }
  return {};
}

void LiveUpgrade::quiesce_step() {
  Status why = quiet();
  if (why.ok()) return save_and_exec();
  if (why.code() != Code::kUnavailable) return resume(why);
  if (std::chrono::steady_clock::now() >= deadline_) {
    return resume(Status(Code::kUnavailable, fmt::format("the shim was not quiet within {} ms: {}",
                                                         kQuiesceTimeout.count(), why.message())));
  }
  timer_.expires_after(std::chrono::milliseconds(2));
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) quiesce_step();
  });
}

void LiveUpgrade::resume(const Status& why) {
  if (server_ != nullptr) server_->resume_input();
  setup_.forwarder->release();
  busy_ = false;
  setup_.logger->warn("live upgrade refused",
                      {{"binary", pending_.binary}, {"error", why.message()}});
  if (pending_.reply) pending_.reply->fail(why);
  pending_ = Pending{};
}

}  // namespace shim::upgrade
