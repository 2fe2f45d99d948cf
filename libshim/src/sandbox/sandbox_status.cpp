#include "sandbox/sandbox_status.h"

#include <boost/json/serialize.hpp>

#include "shim/logger.h"
#include "shim/timestamp.h"

namespace shim {
namespace {

shim::pb::Timestamp go_zero_time() {
  shim::pb::Timestamp zero;
  zero.set_seconds(kGoZeroTimeSeconds);
  return zero;
}

void set_time(boost::json::object& info, std::string_view key,
              const std::optional<SandboxRecord::TimePoint>& time) {
  if (time) info[key] = format_rfc3339_nano_fixed(*time);
}

}  // namespace

sandbox_api::SandboxStatusResponse status_response(const SandboxRecord& record) {
  sandbox_api::SandboxStatusResponse response;
  response.set_sandbox_id(record.id);
  response.set_pid(record.pid);
  response.set_state(std::string(record.ready() ? kSandboxReady : kSandboxNotReady));
  if (record.started_at) *response.mutable_created_at() = to_timestamp(*record.started_at);
  *response.mutable_exited_at() = record.exit ? to_timestamp(record.exit->at) : go_zero_time();
  return response;
}

std::string info_json(const SandboxRecord& record, boost::json::object details) {
  boost::json::object info = std::move(details);
  info["id"] = record.id;
  info["pid"] = record.pid;
  info["state"] = record.ready() ? kSandboxReady : kSandboxNotReady;
  info["bundle"] = record.bundle;
  info["netnsPath"] = record.netns_path;
  set_time(info, "createdAt", record.created_at);
  set_time(info, "startedAt", record.started_at);
  if (record.exit) {
    info["exitedAt"] = format_rfc3339_nano_fixed(record.exit->at);
    info["exitStatus"] = record.exit->status;
  }
  return boost::json::serialize(info);
}

}  // namespace shim
