// The new program's side of a live upgrade: read the state, restore the participants,
// adopt the sockets, answer the Replace call; or go back to the old program.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/vendor_call.h"
#include "socket/unix_listener.h"
#include "ttrpc/frame.h"
#include "ttrpc/wire.h"
#include "upgrade/live_upgrade.h"
#include "upgrade/upgrade_support.h"

namespace shim::upgrade {

namespace json = boost::json;

namespace {

const json::object* object_at(const json::object& parent, std::string_view key) {
  const json::value* value = parent.if_contains(key);
  return value != nullptr && value->is_object() ? &value->as_object() : nullptr;
}

const json::array* array_at(const json::object& parent, std::string_view key) {
  const json::value* value = parent.if_contains(key);
  return value != nullptr && value->is_array() ? &value->as_array() : nullptr;
}

std::int64_t int_at(const json::object& parent, std::string_view key) {
  const json::value* value = parent.if_contains(key);
  return value != nullptr && value->is_int64()    ? value->as_int64()
         : value != nullptr && value->is_uint64() ? static_cast<std::int64_t>(value->as_uint64())
                                                  : -1;
}

std::string string_at(const json::object& parent, std::string_view key) {
  const json::value* value = parent.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : "";
}

Status malformed(std::string_view what) {
  return Status(Code::kInvalidArgument, fmt::format("upgrade state: {}", what));
}

// A connection's calls in flight as request frames, then its unread bytes: the new
// server handles them as if they had just arrived.
Status connection_input(const json::object& connection, std::string* input) {
  const json::array* calls = array_at(connection, "calls");
  if (calls == nullptr) return malformed("a connection without calls");
  for (const json::value& call : *calls) {
    if (!call.is_object()) return malformed("a call is not an object");
    std::string message;
    if (!unhex(string_at(call.as_object(), "message"), &message)) return malformed("call message");
    ttrpc::append_frame(*input, static_cast<std::uint32_t>(int_at(call.as_object(), "stream_id")),
                        ttrpc::FrameType::kRequest, message);
  }
  std::string received;
  if (!unhex(string_at(connection, "received"), &received)) return malformed("received bytes");
  *input += received;
  return {};
}

}  // namespace

Status LiveUpgrade::restore(const Incoming& incoming, std::string* socket_path) {
  int format = 0;
  json::object document;
  Status read = read_state(incoming.state_fd, &format, &document);
  if (!read.ok()) {
    if (!incoming.refused.empty()) return read;  // our own state: nothing to go back to
    return go_back(incoming, read.message());
  }
  Status restored = restore_state(incoming, document, socket_path);
  if (!restored.ok() && incoming.refused.empty()) return go_back(incoming, restored.message());
  ::close(incoming.state_fd);
  if (incoming.old_exe_fd >= 0) ::close(incoming.old_exe_fd);
  return restored;
}

Status LiveUpgrade::restore_state(const Incoming& incoming, const json::object& document,
                                  std::string* socket_path) {
  const json::object* server = object_at(document, "server");
  const json::object* participants = object_at(document, "participants");
  const json::array* events = array_at(document, "events");
  if (server == nullptr || participants == nullptr || events == nullptr) {
    return malformed("no server, participants or events");
  }
  const json::array* listeners = array_at(*server, "listeners");
  const json::array* connections = array_at(*server, "connections");
  const json::object* reply_to = object_at(*server, "reply_to");
  if (listeners == nullptr || connections == nullptr || reply_to == nullptr) {
    return malformed("server without listeners, connections or reply_to");
  }
  // Inputs first: nothing is adopted until the whole document made sense, so going back
  // finds every fd as the old program left it.
  std::vector<std::string> inputs;
  for (const json::value& connection : *connections) {
    if (!connection.is_object()) return malformed("a connection is not an object");
    std::string input;
    if (Status s = connection_input(connection.as_object(), &input); !s.ok()) return s;
    inputs.push_back(std::move(input));
  }
  for (UpgradeParticipant* participant : setup_.participants) {
    const json::object* state = object_at(*participants, participant->upgrade_key());
    if (state == nullptr) {
      return malformed(fmt::format("no state for \"{}\"", participant->upgrade_key()));
    }
    Status s = vendor_call(fmt::format("{}::restore_after_upgrade", participant->upgrade_key()),
                           [&] { return participant->restore_after_upgrade(*state); });
    if (!s.ok()) return s;
  }
  // Committed from here on.
  for (int fd : fds_of(document)) set_cloexec(fd);
  std::vector<std::pair<std::string, std::string>> queued;
  for (const json::value& event : *events) {
    std::string request;
    if (!event.is_object() || !unhex(string_at(event.as_object(), "request"), &request)) continue;
    queued.emplace_back(string_at(event.as_object(), "topic"), std::move(request));
  }
  setup_.forwarder->requeue(std::move(queued));
  for (const json::value& fd : *listeners) {
    int listen_fd = fd.is_int64() ? static_cast<int>(fd.as_int64()) : -1;
    if (socket_path->empty()) (void)socket_path_of(listen_fd, socket_path);
    if (Status s = server_->serve_fd(listen_fd); !s.ok()) {
      setup_.logger->error("live upgrade: listener", {{"fd", listen_fd}, {"error", s.message()}});
    }
  }
  const std::int64_t reply_connection = int_at(*reply_to, "connection");
  const auto reply_stream = static_cast<std::uint32_t>(int_at(*reply_to, "stream_id"));
  std::string reply;
  if (incoming.refused.empty()) {
    pb::upgrade::ReplaceResponse response;
    response.set_pid(static_cast<std::uint32_t>(::getpid()));
    response.set_binary(self_exe());
    response.set_version(setup_.version);
    std::int64_t started = int_at(document, "exec_started_ns");
    if (started > 0)
      response.set_swap_micros(static_cast<std::uint64_t>((monotonic_ns() - started) / 1000));
    reply = ttrpc::wire::response_frame(reply_stream, Status(), response.SerializeAsString());
    setup_.logger->info("live upgrade: serving", {{"from", string_at(document, "old_binary")},
                                                  {"swap_us", response.swap_micros()}});
  } else {
    Status refused(Code::kFailedPrecondition,
                   fmt::format("{} refused the upgrade state: {}; the old program serves on",
                               string_at(document, "binary"), incoming.refused));
    reply = ttrpc::wire::response_frame(reply_stream, refused, {});
    setup_.logger->warn("live upgrade refused",
                        {{"binary", string_at(document, "binary")}, {"error", incoming.refused}});
  }
  for (std::size_t i = 0; i < connections->size(); ++i) {
    int fd = static_cast<int>(int_at((*connections)[i].as_object(), "fd"));
    server_->adopt_connection(fd, static_cast<std::int64_t>(i) == reply_connection ? reply : "",
                              std::move(inputs[i]));
  }
  return {};
}

Status LiveUpgrade::go_back(const Incoming& incoming, const std::string& reason) {
  setup_.logger->error("live upgrade: this program refuses the state, back to the old one",
                       {{"error", reason}});
  if (incoming.old_exe_fd < 0) return Status(Code::kInternal, "no old program to go back to");
  std::vector<std::string> argv = setup_.argv;
  std::vector<std::string> env = exec_env({fmt::format("{}={}", kStateFdEnv, incoming.state_fd),
                                           fmt::format("{}={}", kOldExeFdEnv, incoming.old_exe_fd),
                                           fmt::format("{}={}", kRefusedEnv, reason)});
  ::lseek(incoming.state_fd, 0, SEEK_SET);
  ::execveat(incoming.old_exe_fd, "", c_strings(argv).data(), c_strings(env).data(), AT_EMPTY_PATH);
  return Status(Code::kInternal,
                fmt::format("live upgrade: going back to the old program failed: {} (state "
                            "refused: {})",
                            std::strerror(errno), reason));
}

}  // namespace shim::upgrade
