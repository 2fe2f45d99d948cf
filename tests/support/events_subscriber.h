// EventsSubscriber: `ctr events` running in the background, its output lines collected.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/subprocess.h"

namespace shim::test {

// Each line is what ctr 1.6 prints per event: "<timestamp> <namespace> <topic> <json>".
class EventsSubscriber {
 public:
  // `argv` is the complete ctr command line (… events [filters]).
  EventsSubscriber(const std::vector<std::string>& argv, const std::string& stderr_path);
  ~EventsSubscriber();
  EventsSubscriber(const EventsSubscriber&) = delete;
  EventsSubscriber& operator=(const EventsSubscriber&) = delete;

  // The first line (already received or arriving within `timeout`) for which `predicate`
  // holds; nullopt on timeout.
  std::optional<std::string> wait_for(const std::function<bool(const std::string&)>& predicate,
                                      std::chrono::milliseconds timeout);
  // Shorthand: a line containing every one of `parts`.
  std::optional<std::string> wait_for_line(const std::vector<std::string>& parts,
                                           std::chrono::milliseconds timeout);
  std::vector<std::string> lines() const;
  // All lines joined with '\n' (for failure messages).
  std::string text() const;
  bool running();
  void stop();

 private:
  void read_loop();

  ChildProcess child_;
  int wake_read_ = -1;
  int wake_write_ = -1;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
  bool eof_ = false;
};

}  // namespace shim::test
