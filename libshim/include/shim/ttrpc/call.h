// What a ttrpc handler sees of one call, and how it answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shim/status.h"

namespace shim::ttrpc {

// The largest message (request or response payload) a peer accepts.
inline constexpr std::uint32_t kMaxMessageSize = 4u << 20;  // 4 MiB, as in Go ttrpc

// Request metadata in wire order; a key may repeat.
using Metadata = std::vector<std::pair<std::string, std::string>>;

// What a handler knows of one call.
struct CallInfo {
  std::string service;          // e.g. "containerd.task.v2.Task"
  std::string method;           // e.g. "Create"
  std::uint32_t stream_id = 0;  // the call's stream id on its connection
  Metadata metadata;            // the request's metadata
  // From the request's timeout_nano; none when the client sent 0.
  std::optional<std::chrono::steady_clock::time_point> deadline;

  // The first value of `key`, or empty.
  std::string_view metadata_value(std::string_view key) const;
};

namespace detail {
class CallState;
}

// Completes one call. Cheap to copy (copies share the call); usable from any thread.
// The first completion is sent; later ones are ignored, as are completions after the
// deadline passed (the server already answered DeadlineExceeded) or the connection went
// away. If every copy is destroyed without completing, the server answers Internal
// "ttrpc: handler dropped the call" so the client never hangs.
class Responder {
 public:
  // Used by the server: completes the call whose state it shares.
  explicit Responder(std::shared_ptr<detail::CallState> state) : state_(std::move(state)) {}

  void reply(std::string payload) const;  // status OK with this payload
  void fail(Status status) const;         // status only, empty payload
  // Whether the call was completed (or can no longer be).
  bool done() const;

 private:
  std::shared_ptr<detail::CallState> state_;
};

// A handler gets the call, the request payload (serialized request message) and a
// responder. It may answer before returning or keep the responder and answer later
// from any thread: a Wait that completes hours later holds no thread. A handler that
// throws StatusError is answered with that status; any other exception with Unknown.
using Handler =
    std::function<void(const CallInfo& call, std::string_view payload, Responder responder)>;

}  // namespace shim::ttrpc
