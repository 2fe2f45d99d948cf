// Encoding and decoding of the ttrpc Request/Response envelopes, shared by server and
// client. Frames are built in one buffer (header + message) so each costs one allocation.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shim/status.h"
#include "shim/ttrpc/call.h"

namespace shim::ttrpc::wire {

// A Response frame. Success carries no status field, only the payload (an empty payload
// gives a bare 10-byte header), byte for byte what the Go server sends.
std::string response_frame(std::uint32_t stream_id, const Status& status,
                           std::string_view payload);

std::string request_frame(std::uint32_t stream_id, std::string_view service,
                          std::string_view method, std::string_view payload,
                          std::optional<std::chrono::nanoseconds> timeout,
                          const Metadata& metadata);

// A decoded Request. The views point into the message they were decoded from.
struct RequestView {
  std::string_view service;
  std::string_view method;
  std::string_view payload;
  std::int64_t timeout_nano = 0;
  Metadata metadata;
};

// False if `message` is not a valid Request encoding.
bool decode_request(std::string_view message, RequestView* request);

// Decodes a Response message: its status, and on success the payload into `*payload`.
Status decode_response(std::string_view message, std::string* payload);

// "message length N exceed maximum message size of M", as Go ttrpc words it.
Status oversized_status(std::uint64_t length, std::uint32_t limit);

// The status a handler's exception stands for (call inside a catch block).
Status status_from_current_exception();

}  // namespace shim::ttrpc::wire
