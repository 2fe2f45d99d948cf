#include "shim/linux/oom_watcher.h"

#include "shim/fs.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <fmt/format.h>

#include "linux/cgroup_file.h"
#include "gocompat/go_compat.h"

namespace shim {

struct OomWatcher::Watch {
  Watch(std::string id_, CgroupPaths cgroup_, boost::asio::any_io_executor loop)
      : id(std::move(id_)), cgroup(std::move(cgroup_)), descriptor(std::move(loop)) {}

  std::string id;
  CgroupPaths cgroup;
  std::string dir;  // the memory cgroup (v1) or the cgroup (v2)
  boost::asio::posix::stream_descriptor descriptor;
  std::uint64_t reported = 0;  // kills accounted for (reported, or expected after a wake-up)
  bool closed = false;
};

namespace {

std::optional<std::uint64_t> counter_in(const std::string& path, const std::string& key) {
  std::string text;
  if (!go_read_file(path, &text).ok()) return std::nullopt;
  std::map<std::string, std::uint64_t> counters;
  std::size_t bad_line = 0;
  if (!parse_kv_lines(text, &counters, &bad_line).ok()) return std::nullopt;
  auto it = counters.find(key);
  if (it == counters.end()) return std::nullopt;
  return it->second;
}

// The v1 memory cgroup or the v2 cgroup; "" if the container has no memory cgroup.
std::string memory_dir(const CgroupPaths& cgroup) {
  if (cgroup.version == CgroupVersion::kV2) return cgroup.unified;
  return cgroup.dir("memory");
}

shim::Status errno_error(std::string_view what, const std::string& path, int err) {
  return shim::errno_error(fmt::format("{} {}", what, path), err, ErrorStyle::kGo);
}

// cgroup.events "populated 0", or unreadable: the v2 cgroup has no processes left.
bool cgroup_empty(const std::string& dir) {
  std::optional<std::uint64_t> populated = counter_in(dir + "/cgroup.events", "populated");
  return !populated || *populated == 0;
}

// Reads and discards what is queued on a non-blocking fd; true if anything was.
bool drain(int fd) {
  std::array<char, 4096> buffer{};
  bool any = false;
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return any;
    any = true;
  }
}

}  // namespace

std::optional<std::uint64_t> read_oom_kill_count(const CgroupPaths& cgroup) {
  std::string dir = memory_dir(cgroup);
  if (dir.empty()) return std::nullopt;
  if (cgroup.version == CgroupVersion::kV2) return counter_in(dir + "/memory.events", "oom_kill");
  return counter_in(dir + "/memory.oom_control", "oom_kill");
}

bool read_under_oom(const CgroupPaths& cgroup) {
  if (cgroup.version == CgroupVersion::kV2) return false;
  std::string dir = memory_dir(cgroup);
  if (dir.empty()) return false;
  return counter_in(dir + "/memory.oom_control", "under_oom").value_or(0) != 0;
}

OomWatcher::OomWatcher(boost::asio::any_io_executor loop, shim::Logger logger, OnOom on_oom)
    : loop_(std::move(loop)), logger_(std::move(logger)), on_oom_(std::move(on_oom)) {}

OomWatcher::~OomWatcher() {
  for (auto& [id, watch] : watches_) stop(*watch);
}

shim::Status OomWatcher::add(const std::string& id, const CgroupPaths& cgroup) {
  remove(id);
  auto watch = std::make_shared<Watch>(id, cgroup, loop_);
  watch->dir = memory_dir(cgroup);
  if (watch->dir.empty()) return shim::unknown("cgroups: memory cgroup not supported on this system");
  watch->reported = read_oom_kill_count(cgroup).value_or(0);
  shim::Status status = cgroup.version == CgroupVersion::kV2 ? open_v2(*watch) : open_v1(*watch);
  if (!status.ok()) return status;
  watches_[id] = watch;
  arm(watch);
  return {};
}

shim::Status OomWatcher::open_v1(Watch& watch) {
  int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return shim::unknown(fmt::format("eventfd: {}", go_errno_text(errno)));
  boost::system::error_code ec;
  watch.descriptor.assign(efd, ec);  // owns efd from here on, also on the error paths
  if (ec) {
    ::close(efd);
    return shim::unknown(fmt::format("eventfd: register with the loop: {}", ec.message()));
  }
  std::string control = watch.dir + "/memory.oom_control";
  int cfd = ::open(control.c_str(), O_RDONLY | O_CLOEXEC);
  if (cfd < 0) return errno_error("open", control, errno);
  // "<eventfd> <fd of memory.oom_control>": the kernel holds on to the eventfd, not to
  // the control file, which can be closed right away.
  std::string request = fmt::format("{} {}", efd, cfd);
  std::string event_control = watch.dir + "/cgroup.event_control";
  shim::Status status = write_control_file(event_control, request);
  ::close(cfd);
  return status;
}

shim::Status OomWatcher::open_v2(Watch& watch) {
  int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return shim::unknown(fmt::format("failed to create inotify fd: {}", go_errno_text(errno)));
  boost::system::error_code ec;
  watch.descriptor.assign(fd, ec);
  if (ec) {
    ::close(fd);
    return shim::unknown(fmt::format("inotify: register with the loop: {}", ec.message()));
  }
  for (const char* name : {"memory.events", "cgroup.events"}) {
    std::string path = watch.dir + "/" + name;
    if (::inotify_add_watch(fd, path.c_str(), IN_MODIFY) < 0) {
      return shim::unknown(fmt::format("failed to add inotify watch for {}: {}", shim::go_quote(path),
                                       go_errno_text(errno)));
    }
  }
  return {};
}

void OomWatcher::remove(const std::string& id) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  stop(*it->second);
  watches_.erase(it);
}

bool OomWatcher::monitoring(const std::string& id) const {
  auto it = watches_.find(id);
  return it != watches_.end() && !it->second->closed;
}

void OomWatcher::check(const std::string& id) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  std::shared_ptr<Watch> watch = it->second;
  if (watch->cgroup.version == CgroupVersion::kV2) {
    report_if_new(watch, false);
    return;
  }
  // A pending eventfd wake-up is handled now, so it cannot report the same kill later.
  bool woke = !watch->closed && drain(watch->descriptor.native_handle());
  // The kernel signals the eventfd when the OOM starts, before any kill: no wake-up means
  // no unreported kill, so the exit path skips reading memory.oom_control (~30 µs).
  if (!woke) return;
  on_v1_wakeup(watch, woke);
}

void OomWatcher::arm(const std::shared_ptr<Watch>& watch) {
  if (watch->closed) return;
  watch->descriptor.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                               [this, watch](const boost::system::error_code& ec) {
                                 // closed: removed, or the watcher is gone (this too)
                                 if (ec || watch->closed) return;
                                 on_readable(watch);
                               });
}

void OomWatcher::on_readable(const std::shared_ptr<Watch>& watch) {
  bool woke = drain(watch->descriptor.native_handle());
  if (watch->cgroup.version == CgroupVersion::kV2) {
    if (woke) on_v2_change(watch);
  } else {
    on_v1_wakeup(watch, woke);
  }
  arm(watch);
}

void OomWatcher::on_v1_wakeup(const std::shared_ptr<Watch>& watch, bool woke) {
  if (woke && !path_exists(watch->dir)) {
    stop(*watch);  // the wake-up announced the cgroup's removal
    return;
  }
  report_if_new(watch, woke);
}

void OomWatcher::on_v2_change(const std::shared_ptr<Watch>& watch) {
  bool last = cgroup_empty(watch->dir);  // checked first: no kill can follow then
  std::string events = watch->dir + "/memory.events";
  std::string text;
  shim::Status status = go_read_file(events, &text);
  if (!status.ok()) {
    // Missing: the cgroup was removed. Anything else is worth a line in the log.
    if (!is_not_exist(status))
      logger_.warn("oom watcher stops", {{"id", watch->id}, {"error", status.message()}});
    stop(*watch);
    return;
  }
  report_if_new(watch, false);
  if (last) stop(*watch);
}

// v1 wake-ups come before the kill is counted (the kernel signals when the OOM starts),
// and v1 reports OOMs without kills too (oom_kill_disable), so a wake-up reports unless
// it only announces a kill check() already reported; it accounts for one more kill.
void OomWatcher::report_if_new(const std::shared_ptr<Watch>& watch, bool woke) {
  std::optional<std::uint64_t> kills = read_oom_kill_count(watch->cgroup);
  bool report = false;
  if (kills && *kills > watch->reported) {
    watch->reported = *kills;
    report = true;
  } else if (woke) {
    if (kills) watch->reported = std::max(watch->reported, *kills + 1);
    report = true;
  }
  if (!report) return;
  std::string id = watch->id;  // on_oom may remove the watch
  on_oom_(id);
}

void OomWatcher::stop(Watch& watch) {
  if (watch.closed) return;
  watch.closed = true;
  boost::system::error_code ignored;
  watch.descriptor.close(ignored);
}

}  // namespace shim
