// Polling with a deadline, for tests that wait on something outside the process (a file a
// container writes, containerd's state).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace shim::test {

// Calls `done` every 20 ms until it returns true (true) or `timeout` passed (its last
// answer, asked once more at the deadline).
inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace shim::test
