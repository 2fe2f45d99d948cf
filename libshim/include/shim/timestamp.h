// google.protobuf.Timestamp values as containerd expects them in task replies and events.
#pragma once

#include <chrono>
#include <optional>

#include "shim/pb/timestamp.pb.h"
#include "shim/process/exit.h"

namespace shim {

// Go's zero time, 0001-01-01T00:00:00Z: what the Go shims send for "not exited". Every
// containerd release decodes it the same way; an absent field or 0 would not be.
inline constexpr std::int64_t kGoZeroTimeSeconds = -62135596800;

// A protobuf Timestamp (seconds + nanos since the epoch) of `t`.
inline shim::pb::Timestamp to_timestamp(std::chrono::system_clock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  shim::pb::Timestamp ts;
  ts.set_seconds(ns / 1'000'000'000);
  ts.set_nanos(static_cast<int>(ns % 1'000'000'000));
  return ts;
}

// The exit time of `exit`, or the Go zero time while the process has not exited.
inline shim::pb::Timestamp exited_at(const std::optional<ProcessExit>& exit) {
  if (exit) return to_timestamp(exit->exited_at);
  shim::pb::Timestamp ts;
  ts.set_seconds(kGoZeroTimeSeconds);
  return ts;
}

}  // namespace shim
