// Clock: wall-clock time, injected so tests control timestamps (event times, exited_at,
// log lines). Not a global: whoever needs the time gets a `const Clock&`.
#pragma once

#include <chrono>

namespace shim {

// The time source everything in the shim reads (never the system clock directly).
class Clock {
 public:
  virtual ~Clock() = default;
  // Now, as a wall-clock time point.
  virtual std::chrono::system_clock::time_point now() const = 0;
};

// The real clock (std::chrono::system_clock).
class SystemClock final : public Clock {
 public:
  // std::chrono::system_clock::now().
  std::chrono::system_clock::time_point now() const override;
};

}  // namespace shim
