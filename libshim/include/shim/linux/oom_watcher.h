// OomWatcher: notices out-of-memory events in containers' cgroups, on the event loop
// (the Go runc shim's pkg/oom v1/v2 watchers, without their threads):
//  v1: an eventfd registered through cgroup.event_control for memory.oom_control; each
//      wake-up reports the container, unless its memory cgroup is gone (removing the
//      cgroup wakes the eventfd too).
//  v2: inotify on memory.events (and cgroup.events); a report when oom_kill grows. Once
//      cgroup.events says the cgroup is empty, the file is read one last time and the
//      fd is closed.
//
// The kernel's notification and SIGCHLD for the killed init race: the service calls
// check(id) from on_reaped of init, which reports (synchronously, through on_oom) a kill
// not reported yet, so TaskOOM goes out before TaskExit. Kill counters make the later
// wake-up for the same kill a no-op. Every method must run on the loop. All fds are
// closed by remove() and by the destructor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "shim/linux/cgroup.h"
#include "shim/logger.h"
#include "shim/status.h"

namespace shim {

class OomWatcher {
 public:
  // Called on the loop with the container id; may call add/remove/check.
  using OnOom = std::function<void(const std::string& container_id)>;

  // Reports through `on_oom` on `loop`; logs watch failures to `logger`.
  OomWatcher(boost::asio::any_io_executor loop, shim::Logger logger, OnOom on_oom);
  ~OomWatcher();
  OomWatcher(const OomWatcher&) = delete;
  OomWatcher& operator=(const OomWatcher&) = delete;

  // Starts watching `cgroup` for container `id` (replacing an earlier watch of `id`).
  // Kills counted before this call are not reported. Errors: v1 without a memory
  // cgroup ("cgroups: memory cgroup not supported on this system"), eventfd, open or
  // cgroup.event_control write failures; v2 inotify failures (the file paths named).
  shim::Status add(const std::string& id, const CgroupPaths& cgroup);

  // Stops watching `id` and closes its fd; unknown ids are ignored.
  void remove(const std::string& id);

  // Reports an OOM kill of `id` that happened but was not reported yet (and consumes a
  // pending v1 wake-up). For on_reaped of init, before the exit is published.
  void check(const std::string& id);

  // Whether `id` is watched (added and not removed).
  bool contains(const std::string& id) const { return watches_.count(id) != 0; }
  // Whether `id`'s fd is still open (false after its cgroup went away or emptied (v2)).
  bool monitoring(const std::string& id) const;
  std::size_t size() const { return watches_.size(); }

 private:
  struct Watch;

  shim::Status open_v1(Watch& watch);
  shim::Status open_v2(Watch& watch);
  void arm(const std::shared_ptr<Watch>& watch);
  void on_readable(const std::shared_ptr<Watch>& watch);
  void on_v1_wakeup(const std::shared_ptr<Watch>& watch, bool woke);
  void on_v2_change(const std::shared_ptr<Watch>& watch);
  void report_if_new(const std::shared_ptr<Watch>& watch, bool woke);
  void stop(Watch& watch);

  boost::asio::any_io_executor loop_;
  shim::Logger logger_;
  OnOom on_oom_;
  std::map<std::string, std::shared_ptr<Watch>> watches_;
};

// The kill counter of the cgroup's memory controller: v1 the oom_kill line of
// memory.oom_control (Linux >= 4.13), v2 oom_kill of memory.events. nullopt when the
// file or line is missing. One small cgroupfs read: fine on the loop.
std::optional<std::uint64_t> read_oom_kill_count(const CgroupPaths& cgroup);

// v1: whether memory.oom_control says under_oom 1 (a task waits for memory because the
// OOM killer is disabled). v2 has no such state: false.
bool read_under_oom(const CgroupPaths& cgroup);

}  // namespace shim
