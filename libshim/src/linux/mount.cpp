#include "shim/linux/mount.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "gocompat/go_compat.h"
#include "linux/loop_device.h"
#include "linux/mount_options.h"
#include "linux/root_path.h"
#include "shim/logger.h"

namespace shim {

namespace {

constexpr unsigned long kPropagation = MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE;
// Stacked mounts on one point are removed one per umount2(); this only bounds a loop
// that would otherwise never end if the kernel kept answering success.
constexpr int kMaxUnmountsPerPoint = 1000;
// containerd's margin below a page before it shortens overlay lowerdirs.
constexpr std::size_t kOverlayMargin = 512;

// Sets the calling thread's signal mask for its lifetime.
class SignalMaskGuard {
 public:
  explicit SignalMaskGuard(const sigset_t& mask) { pthread_sigmask(SIG_SETMASK, &mask, &saved_); }
  ~SignalMaskGuard() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SignalMaskGuard(const SignalMaskGuard&) = delete;
  SignalMaskGuard& operator=(const SignalMaskGuard&) = delete;

 private:
  sigset_t saved_;
};

std::size_t page_size() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

// mount(2) run with `dir` as working directory, so relative lowerdirs resolve there. The
// working directory is shared by all threads of the shim: a short-lived thread that
// unshares its fs context (CLONE_FS) changes only its own. Returns 0 or an errno.
int mount_from_dir(const std::string& dir, const std::string& source, const std::string& target,
                   const std::string& type, unsigned long flags, const std::string& data,
                   std::string* step) {
  int result = 0;
  std::string failed_step;
  // The thread must take no signal meant for the shim's signalfd: start it fully blocked
  // (threads inherit the creator's mask), then restore ours.
  sigset_t all;
  sigfillset(&all);
  SignalMaskGuard blocked(all);
  std::thread worker([&] {
    if (::unshare(CLONE_FS) != 0) {
      result = errno;
      failed_step = "unshare(CLONE_FS)";
    } else if (::chdir(dir.c_str()) != 0) {
      result = errno;
      failed_step = fmt::format("chdir {}", dir);
    } else if (::mount(source.c_str(), target.c_str(), type.c_str(), flags, data.c_str()) != 0) {
      result = errno;
    }
  });
  worker.join();
  *step = std::move(failed_step);
  return result;
}

shim::Status mount_error(const std::string& what, int err) {
  return shim::unknown(fmt::format("{}: {}", what, go_errno_text(err)));
}

shim::Status first_mount(const MountEntry& entry, const std::string& target,
                         const std::string& chdir, unsigned long flags, const std::string& data,
                         bool loop) {
  std::string source = entry.source;
  LoopDevice device;  // closed after the mount; autoclear frees it on unmount
  if (loop) {
    if (shim::Status s = LoopDevice::attach(source, (flags & MS_RDONLY) != 0, &device); !s.ok())
      return s;
    source = device.path();
  }
  std::string what = fmt::format("mount {} on {} (type {})", shim::go_quote(source),
                                 shim::go_quote(target), shim::go_quote(entry.type));
  if (chdir.empty()) {
    if (::mount(source.c_str(), target.c_str(), entry.type.c_str(), flags, data.c_str()) != 0)
      return mount_error(what, errno);
    return {};
  }
  std::string step;
  if (int err = mount_from_dir(chdir, source, target, entry.type, flags, data, &step); err != 0)
    return mount_error(step.empty() ? what + " from " + chdir : what + ": " + step, err);
  return {};
}

shim::Status mount_at(const MountEntry& entry, const std::string& target) {
  if (entry.type.starts_with("fuse.") || entry.type.starts_with("fuse3.")) {
    return shim::unknown(fmt::format("mount type {}: FUSE mount helpers are not supported",
                                     shim::go_quote(entry.type)));
  }
  std::vector<std::string> options = entry.options;
  std::string chdir;
  if (entry.type == "overlay" && mount_options_size(options) >= page_size() - kOverlayMargin) {
    CompactedOverlay compacted = compact_lowerdir_option(options);
    chdir = std::move(compacted.chdir);
    options = std::move(compacted.options);
  }
  ParsedMountOptions parsed = parse_mount_options(options);
  if (!parsed.uidmap.empty() || !parsed.gidmap.empty())
    return shim::unknown("idmapped mounts (uidmap=, gidmap=) are not supported");
  std::string data = parsed.data_string();
  if (data.size() > page_size()) {
    return shim::unknown(
        fmt::format("mount options is too long ({} bytes of data, limit {})", data.size(),
                    page_size()));
  }

  unsigned long flags = parsed.flags & ~kPropagation;
  // A remount without new data needs no first call (moby/moby#34077).
  if ((parsed.flags & MS_REMOUNT) == 0 || !data.empty()) {
    if (shim::Status s = first_mount(entry, target, chdir, flags, data, parsed.loop); !s.ok())
      return s;
  }
  if ((parsed.flags & kPropagation) != 0) {
    unsigned long propagation = parsed.flags & (kPropagation | MS_REC | MS_SILENT);
    if (::mount("", target.c_str(), "", propagation, "") != 0)
      return mount_error(fmt::format("set propagation of {}", shim::go_quote(target)), errno);
  }
  // MS_RDONLY is ignored when a bind mount is made: remount the bind read-only.
  if ((flags & (MS_BIND | MS_RDONLY)) == (MS_BIND | MS_RDONLY)) {
    if (::mount("", target.c_str(), "", flags | MS_REMOUNT, "") != 0)
      return mount_error(fmt::format("remount {} read-only", shim::go_quote(target)), errno);
  }
  return {};
}

shim::Status resolve_target(const MountEntry& entry, const std::string& root,
                            std::string* target) {
  shim::Status status = root_path(root, entry.target, target);
  if (status.ok()) return {};
  return shim::unknown(fmt::format("failed to join path {} with root {}: {}",
                                   shim::go_quote(entry.target), shim::go_quote(root),
                                   status.message()));
}

// mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo.
std::string unescape_mountinfo(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    bool octal = field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' &&
                 field[i + 1] <= '7' && field[i + 2] >= '0' && field[i + 2] <= '7' &&
                 field[i + 3] >= '0' && field[i + 3] <= '7';
    if (!octal) {
      out += field[i];
      continue;
    }
    out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                             (field[i + 3] - '0'));
    i += 3;
  }
  return out;
}

bool is_at_or_below(const std::string& point, const std::string& target) {
  if (target == "/") return true;
  return point == target || (point.size() > target.size() && point.starts_with(target) &&
                             point[target.size()] == '/');
}

// Detaches every mount stacked on `point`.
shim::Status unmount_point(const std::string& point) {
  for (int i = 0; i < kMaxUnmountsPerPoint; ++i) {
    if (::umount2(point.c_str(), MNT_DETACH) == 0) continue;
    if (errno == EINVAL || errno == ENOENT) return {};  // nothing (more) mounted there
    return mount_error(fmt::format("unmount {}", point), errno);
  }
  return shim::unknown(fmt::format("unmount {}: still mounted after {} unmounts", point,
                                   kMaxUnmountsPerPoint));
}

}  // namespace

std::vector<MountEntry> mount_entries(
    const google::protobuf::RepeatedPtrField<containerd::types::Mount>& mounts) {
  std::vector<MountEntry> entries;
  for (const containerd::types::Mount& mount : mounts) {
    entries.push_back(MountEntry{mount.type(), mount.source(), mount.target(),
                                 {mount.options().begin(), mount.options().end()}});
  }
  return entries;
}

std::string rootfs_path(std::string_view bundle) { return go_join_path(bundle, "rootfs"); }

shim::Status make_rootfs_dir(std::string_view bundle, std::string* rootfs) {
  *rootfs = rootfs_path(bundle);
  if (::mkdir(rootfs->c_str(), 0711) != 0 && errno != EEXIST)
    return mount_error(fmt::format("mkdir {}", *rootfs), errno);
  return {};
}

shim::Status mount_entry(const MountEntry& entry, const std::string& root) {
  std::string target;
  if (shim::Status status = resolve_target(entry, root, &target); !status.ok()) return status;
  return mount_at(entry, target);
}

shim::Status mount_all(const std::vector<MountEntry>& entries, const std::string& root) {
  std::vector<std::string> targets;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const MountEntry& entry = entries[i];
    std::string target;
    shim::Status status = resolve_target(entry, root, &target);
    if (status.ok()) {
      targets.push_back(target);
      status = mount_at(entry, target);
    }
    if (status.ok()) continue;
    // Undo what was mounted; the failed mount's error is the one to report.
    for (auto it = targets.rbegin(); it != targets.rend(); ++it) unmount_all(*it).ignore_error();
    return shim::unknown(fmt::format(
        "mount rootfs component {}/{} (type {}, source {}, target {}): {}", i + 1,
        entries.size(), shim::go_quote(entry.type), shim::go_quote(entry.source),
        shim::go_quote(target.empty() ? entry.target : target), status.message()));
  }
  return {};
}

shim::Status mount_points_under(const std::string& target, std::vector<std::string>* points) {
  points->clear();
  std::ifstream mountinfo("/proc/self/mountinfo");
  if (!mountinfo) return shim::unknown("open /proc/self/mountinfo: cannot read");
  std::string line;
  while (std::getline(mountinfo, line)) {
    // id parent major:minor root mount-point ...
    std::size_t start = 0;
    for (int field = 0; field < 4 && start != std::string::npos; ++field) {
      start = line.find(' ', start);
      if (start != std::string::npos) ++start;
    }
    if (start == std::string::npos) continue;
    std::string point = unescape_mountinfo(std::string_view(line).substr(start, line.find(' ', start) - start));
    if (!is_at_or_below(point, target)) continue;
    if (std::find(points->begin(), points->end(), point) == points->end()) points->push_back(point);
  }
  return {};
}

shim::Status unmount_all(const std::string& target) {
  if (target.empty()) return {};
  std::unique_ptr<char, decltype(&::free)> real(::realpath(target.c_str(), nullptr), &::free);
  if (!real) {
    if (errno == ENOENT) return {};
    return mount_error(fmt::format("realpath {}", target), errno);
  }
  std::string canonical = real.get();
  std::vector<std::string> points;
  if (shim::Status status = mount_points_under(canonical, &points); !status.ok()) return status;
  std::stable_sort(points.begin(), points.end(), [](const std::string& a, const std::string& b) {
    return a.size() > b.size();  // deepest first
  });
  shim::Status result;
  for (const std::string& point : points) {
    shim::Status status = unmount_point(point);
    if (!status.ok() && point == canonical) result = status;
  }
  return result;
}

}  // namespace shim
