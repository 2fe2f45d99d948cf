// SandboxService's part in a live upgrade (shim/live_upgrade.h, docs/live-upgrade.md): the
// record containerd reads (id, bundle, netns, times, pid, exit) and the plug-in's own state
// (Sandbox::save_for_upgrade, SandboxRuntime::reopen). WaitSandbox calls in flight are
// not carried here: the server hands them to the new program as requests again.
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>

#include "sandbox/sandbox_exit_reports.h"
#include "sandbox/sandbox_service.h"
#include "upgrade/state_fields.h"
#include "upgrade/upgrade_support.h"

namespace shim {

namespace json = boost::json;

namespace {

using TimePoint = std::chrono::system_clock::time_point;

json::value time_value(const std::optional<TimePoint>& at) {
  if (!at) return nullptr;
  return upgrade::epoch_ns(*at);
}

// Null: none; otherwise nanoseconds since the epoch.
std::optional<TimePoint> time_of(upgrade::StateFields& fields, const json::object& saved,
                                 std::string_view key) {
  const json::value* value = saved.if_contains(key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  return upgrade::from_epoch_ns(fields.number(key));
}

}  // namespace

Status SandboxService::ready_for_upgrade() {
  // The plug-in's sandbox is gone but what it did to the process may not be (a pod's
  // namespaces stay with the main thread): nothing would carry it.
  if (!shut_down_id_.empty()) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("sandbox {} was shut down; the shim only waits for its last task",
                              shut_down_id_));
  }
  if (record_ == nullptr) return {};
  if (record_->sandbox == nullptr) {
    return Status(Code::kUnavailable,
                  fmt::format("sandbox {}: its create is under way", record_->id));
  }
  if (record_->ops->busy()) {
    return Status(Code::kUnavailable, fmt::format("sandbox {}: a call is under way", record_->id));
  }
  if (record_->reports_pending > 0) {
    return Status(Code::kUnavailable,
                  fmt::format("sandbox {}: its exit report is on the way", record_->id));
  }
  return {};
}

Status SandboxService::save_for_upgrade(json::object* state, std::vector<int>* fds) {
  if (record_ == nullptr) {
    (*state)["sandbox"] = nullptr;
    return {};
  }
  const SandboxRecord& record = *record_;
  json::object vendor;
  std::vector<int> vendor_fds;
  if (Status s = record.sandbox->save_for_upgrade(&vendor, &vendor_fds); !s.ok()) {
    return Status(s.code(), fmt::format("sandbox {}: {}", record.id, s.message()));
  }
  json::array fd_list;
  for (int fd : vendor_fds) {
    fd_list.push_back(fd);
    fds->push_back(fd);
  }
  json::value exit = nullptr;
  if (record.exit) {
    exit = json::object{{"status", record.exit->status}, {"at", time_value(record.exit->at)}};
  }
  (*state)["sandbox"] = json::object{{"id", record.id},
                                     {"bundle", record.bundle},
                                     {"netns_path", record.netns_path},
                                     {"created_at", time_value(record.created_at)},
                                     {"started_at", time_value(record.started_at)},
                                     {"pid", record.pid},
                                     {"exit", std::move(exit)},
                                     {"fds", std::move(fd_list)},
                                     {"state", std::move(vendor)}};
  return {};
}

Status SandboxService::restore_after_upgrade(const json::object& state) {
  const json::value* saved = state.if_contains("sandbox");
  if (saved == nullptr) return Status(Code::kFailedPrecondition, "upgrade state: no \"sandbox\"");
  if (saved->is_null()) return {};
  upgrade::StateFields fields(*saved, "sandboxes.sandbox");
  auto record = std::make_shared<SandboxRecord>();
  record->id = fields.text("id");
  record->bundle = fields.text("bundle");
  record->netns_path = fields.text("netns_path");
  record->pid = static_cast<std::uint32_t>(fields.count("pid"));
  const json::array* fd_list = fields.array("fds");
  const json::value* vendor = fields.object("state");
  if (!fields.status().ok()) return fields.status();
  const json::object& object = saved->as_object();
  record->created_at = time_of(fields, object, "created_at");
  record->started_at = time_of(fields, object, "started_at");
  if (const json::value* exit = object.if_contains("exit"); exit != nullptr && !exit->is_null()) {
    upgrade::StateFields exit_fields(*exit, "sandboxes.sandbox.exit");
    SandboxExit ended;
    ended.status = static_cast<std::uint32_t>(exit_fields.count("status"));
    ended.at = upgrade::from_epoch_ns(exit_fields.number("at"));
    if (!exit_fields.status().ok()) return exit_fields.status();
    record->exit = ended;
  }
  if (!fields.status().ok()) return fields.status();

  SandboxConfig config;
  config.id = record->id;
  config.bundle = record->bundle;
  config.netns_path = record->netns_path;
  std::shared_ptr<SandboxEvents> events = std::make_shared<SandboxExitReports>(
      context_.executor, context_.clock, context_.logger, record);
  std::unique_ptr<GuardedSandbox> reopened;
  if (Status s = guarded_reopen(*runtime_, config, vendor->as_object(), events, context_.logger,
                                &reopened);
      !s.ok()) {
    return Status(s.code(), fmt::format("sandbox {}: {}", record->id, s.message()));
  }
  record->sandbox = std::move(reopened);
  record_ = record;
  context_.shutdown.set_keeper(std::string(kSandboxKeeper), [this] { return why_kept(); });
  // The plug-in took duplicates; the numbers close once the loop runs, i.e. once the
  // upgrade is committed (until then the old program may need them again).
  std::vector<int> originals;
  for (const json::value& fd : *fd_list) {
    if (fd.is_int64() && fd.as_int64() >= 0 && fd.as_int64() <= INT32_MAX)
      originals.push_back(static_cast<int>(fd.as_int64()));
  }
  boost::asio::post(context_.executor, [originals] {
    for (int fd : originals) ::close(fd);
  });
  context_.logger.info("sandbox carried across a live upgrade",
                       {{"id", record->id}, {"ready", record->ready()}});
  return {};
}

}  // namespace shim
