// The old program's last step of a live upgrade: the state document and the exec.
//
// The document (format 1):
//   {"binary": new, "old_binary": ours, "exec_started_ns": CLOCK_MONOTONIC,
//    "server": {"listeners": [fd...], "connections": [{"fd", "received" (hex),
//               "calls": [{"stream_id", "message" (hex)}]}],
//               "reply_to": {"connection": index, "stream_id"}},
//    "events": [{"topic", "request" (hex)}],
//    "participants": {key: state}, "participant_fds": {key: [fd...]}}
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/vendor_call.h"
#include "ttrpc/wire.h"
#include "upgrade/live_upgrade.h"
#include "upgrade/upgrade_support.h"

namespace shim::upgrade {

namespace json = boost::json;

namespace {

bool is_replace_call(const ttrpc::SavedCall& call, std::uint32_t stream_id) {
  ttrpc::wire::RequestView request;
  return call.stream_id == stream_id && ttrpc::wire::decode_request(call.message, &request) &&
         request.service == kUpgradeService && request.method == kReplaceMethod;
}

}  // namespace

Status LiveUpgrade::save(json::object* document, KeptFds* kept) {
  ttrpc::SavedServer saved;
  if (Status s = server_->save_for_upgrade(&saved); !s.ok()) return s;
  json::object server;
  json::array listeners;
  for (int fd : saved.listeners) {
    listeners.push_back(fd);
    kept->add(fd);
  }
  json::array connections;
  std::optional<json::object> reply_to;
  for (std::size_t i = 0; i < saved.connections.size(); ++i) {
    const ttrpc::SavedConnection& connection = saved.connections[i];
    kept->add(connection.fd);
    json::array calls;
    for (const ttrpc::SavedCall& call : connection.calls) {
      if (!reply_to && is_replace_call(call, pending_.stream_id)) {
        reply_to = json::object{{"connection", i}, {"stream_id", call.stream_id}};
        continue;
      }
      calls.push_back({{"stream_id", call.stream_id}, {"message", hex(call.message)}});
    }
    connections.push_back({{"fd", connection.fd},
                           {"received", hex(connection.received)},
                           {"calls", std::move(calls)}});
  }
  if (!reply_to) return Status(Code::kInternal, "the Replace call is no longer in flight");
  server["listeners"] = std::move(listeners);
  server["connections"] = std::move(connections);
  server["reply_to"] = std::move(*reply_to);
  (*document)["server"] = std::move(server);

  json::array events;
  for (auto& [topic, request] : setup_.forwarder->queued()) {
    events.push_back({{"topic", topic}, {"request", hex(request)}});
  }
  (*document)["events"] = std::move(events);

  json::object participants, participant_fds;
  for (UpgradeParticipant* participant : setup_.participants) {
    const std::string key(participant->upgrade_key());
    json::object state;
    std::vector<int> fds;
    Status s = vendor_call(fmt::format("{}::save_for_upgrade", key),
                           [&] { return participant->save_for_upgrade(&state, &fds); });
    if (!s.ok()) return s;
    json::array fd_list;
    for (int fd : fds) {
      fd_list.push_back(fd);
      kept->add(fd);
    }
    participants[key] = std::move(state);
    participant_fds[key] = std::move(fd_list);
  }
  (*document)["participants"] = std::move(participants);
  (*document)["participant_fds"] = std::move(participant_fds);
  (*document)["binary"] = pending_.binary;
  (*document)["old_binary"] = self_exe();
  return {};
}

void LiveUpgrade::save_and_exec() {
  json::object document;
  KeptFds kept;
  Status saved = save(&document, &kept);
  int state_fd = -1;
  document["exec_started_ns"] = monotonic_ns();
  if (saved.ok()) saved = write_state(document, kStateFormat, &state_fd);
  int old_exe = saved.ok() ? ::open("/proc/self/exe", O_PATH | O_CLOEXEC) : -1;
  if (saved.ok() && old_exe < 0) {
    saved = Status(Code::kInternal, fmt::format("open /proc/self/exe: {}", std::strerror(errno)));
  }
  if (saved.ok()) {
    kept.add(state_fd);
    kept.add(old_exe);
    saved = kept.clear_cloexec();
  }
  if (saved.ok()) {
    setup_.logger->info("live upgrade: exec", {{"binary", pending_.binary},
                                               {"connections", server_->connection_count()}});
    std::vector<std::string> argv = setup_.argv;
    argv[0] = pending_.binary;
    std::vector<std::string> env = exec_env(
        {fmt::format("{}={}", kStateFdEnv, state_fd), fmt::format("{}={}", kOldExeFdEnv, old_exe)});
    ::execve(pending_.binary.c_str(), c_strings(argv).data(), c_strings(env).data());
    saved = Status(Code::kFailedPrecondition,
                   fmt::format("exec {}: {}", pending_.binary, std::strerror(errno)));
    kept.set_cloexec();
  }
  if (state_fd >= 0) ::close(state_fd);
  if (old_exe >= 0) ::close(old_exe);
  for (UpgradeParticipant* participant : setup_.participants) {
    (void)vendor_call(fmt::format("{}::upgrade_aborted", participant->upgrade_key()), [&] {
      participant->upgrade_aborted();
      return Status();
    });
  }
  resume(saved);
}

}  // namespace shim::upgrade
