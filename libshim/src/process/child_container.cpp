#include "process/child_container.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "linux/mount_options.h"
#include "linux/root_path.h"
#include "shim/unique_fd.h"

namespace shim::spawn {
namespace {

constexpr unsigned long kPropagationFlags = MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE;
constexpr unsigned long kRemountableFlags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;

// The propagation options' flags ("rprivate": MS_PRIVATE | MS_REC), the last one wins.
unsigned long propagation_of(const std::vector<std::string>& options) {
  unsigned long flags = 0;
  for (std::string_view option : options) {
    bool recursive = option.size() > 1 && option.front() == 'r' && option != "ro" &&
                     option != "rw" && option != "relatime" && option != "rbind";
    std::string_view name = recursive ? option.substr(1) : option;
    unsigned long kind = name == "shared"       ? MS_SHARED
                         : name == "private"    ? MS_PRIVATE
                         : name == "slave"      ? MS_SLAVE
                         : name == "unbindable" ? MS_UNBINDABLE
                                                : 0;
    if (kind != 0) flags = kind | (recursive ? MS_REC : 0);
  }
  return flags;
}

// Makes `target` (already resolved inside the root) exist: for a bind mount as what its
// source is (a directory, or an empty file for anything else), else a directory.
Status create_mount_target(const SpawnMount& mount, bool bind, const std::string& target) {
  bool directory = true;
  if (bind) {
    struct stat source {};
    if (::stat(mount.source.c_str(), &source) < 0) {
      return unknown(fmt::format("mount source {}: {}", mount.source, std::strerror(errno)));
    }
    directory = S_ISDIR(source.st_mode);
  }
  std::error_code error;
  std::filesystem::create_directories(
      directory ? std::filesystem::path(target) : std::filesystem::path(target).parent_path(),
      error);
  if (error) return unknown(fmt::format("mount target {}: {}", mount.target, error.message()));
  if (!directory && ::access(target.c_str(), F_OK) != 0) {
    UniqueFd file(::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (file.get() < 0) {
      return unknown(fmt::format("mount target {}: {}", mount.target, std::strerror(errno)));
    }
  }
  return {};
}

// The file the child writes "0" to for `procs` (a cgroup.procs). On cgroup v1 that is
// the `tasks` file beside it: the child is single-threaded then, and a thread that moves
// itself through `tasks` skips the kernel's global threadgroup lock
// (kernel/cgroup/cgroup.c, cgroup_procs_write_start), whose first writer after a quiet
// spell waits an RCU grace period (measured on 6.18: 0.2 ms vs 11 ms for six
// controllers; a kernel without that shortcut costs what cgroup.procs does).
// v2 has no `tasks` in a domain cgroup: cgroup.procs stays.
std::string join_file(const std::string& procs) {
  constexpr std::string_view kProcs = "/cgroup.procs";
  if (!procs.ends_with(kProcs)) return procs;
  std::string tasks = procs.substr(0, procs.size() - kProcs.size()) + "/tasks";
  return ::access(tasks.c_str(), W_OK) == 0 ? tasks : procs;
}

}  // namespace

bool has_container_fields(const SpawnRequest& request) {
  return !request.cgroup_procs.empty() || !request.join_namespace_files.empty() ||
         !request.hostname.empty() || !request.mounts.empty() || request.pivot_root ||
         request.clone_parent || static_cast<bool>(request.run_in_child);
}

Status ChildContainer::prepare(const SpawnRequest& request) {
  request_ = &request;
  for (const std::string& file : request.cgroup_procs) cgroup_files_.push_back(join_file(file));
  for (const std::string& file : cgroup_files_) cgroup_procs_.push_back(file.c_str());
  for (auto [type, fd] : request.join_namespace_files) {
    if (fd < 0) {
      return invalid_argument(fmt::format("spawn {}: join_namespace_files: fd {} for type {:#x}",
                                          request.path, fd, type));
    }
    if (type == CLONE_NEWPID) {
      pid_namespace_fd_ = fd;
      continue;
    }
    namespace_types_.push_back(type);
    namespace_fds_.push_back(fd);
  }
  bool new_mounts = (request.new_namespaces & CLONE_NEWNS) != 0;
  if (!request.hostname.empty() && (request.new_namespaces & CLONE_NEWUTS) == 0) {
    return invalid_argument(
        fmt::format("spawn {}: hostname needs a new UTS namespace (CLONE_NEWUTS)", request.path));
  }
  if ((!request.mounts.empty() || request.pivot_root) && (!new_mounts || request.root.empty())) {
    return invalid_argument(fmt::format(
        "spawn {}: mounts and pivot_root need a root and a new mount namespace", request.path));
  }
  for (const SpawnMount& mount : request.mounts) {
    ParsedMountOptions options = parse_mount_options(mount.options);
    bool bind = mount.type == "bind" || (options.flags & MS_BIND) != 0;
    Mount m;
    if (Status s = root_path(request.root, mount.target, &m.target); !s.ok()) {
      return Status(s.code(), fmt::format("spawn {}: mount target {}: {}", request.path,
                                          mount.target, s.message()));
    }
    if (Status s = create_mount_target(mount, bind, m.target); !s.ok()) {
      return Status(s.code(), fmt::format("spawn {}: {}", request.path, s.message()));
    }
    // MS_REC means two things: "rbind" (the submounts too) and "rprivate" (propagation
    // of the whole tree); parse_mount_options merges them, so each is read from its own
    // option, as runc's pgflags are.
    m.propagation = propagation_of(mount.options);
    if (bind) {
      bool recursive = std::count(mount.options.begin(), mount.options.end(), "rbind") > 0;
      m.flags = MS_BIND | (recursive ? MS_REC : 0);
      unsigned long remount = options.flags & kRemountableFlags;
      if (remount != 0) m.remount_flags = MS_REMOUNT | MS_BIND | remount;
    } else {
      m.flags = options.flags & ~(kPropagationFlags | MS_REC);
      m.data = options.data_string();
    }
    mounts_.push_back(std::move(m));
  }
  for (std::size_t i = 0; i < mounts_.size(); ++i) {
    const SpawnMount& mount = request.mounts[i];
    bool bind = (mounts_[i].flags & MS_BIND) != 0;
    mount_sources_.push_back(mount.source.c_str());
    mount_targets_.push_back(mounts_[i].target.c_str());
    mount_types_.push_back(bind ? nullptr : mount.type.c_str());
    mount_data_.push_back(mounts_[i].data.empty() ? nullptr : mounts_[i].data.c_str());
    mount_flags_.push_back(mounts_[i].flags);
    mount_remount_flags_.push_back(mounts_[i].remount_flags);
    mount_propagation_.push_back(mounts_[i].propagation);
  }
  return {};
}

void ChildContainer::fill(ChildPlan* plan) const {
  const SpawnRequest& request = *request_;
  plan->cgroup_procs = cgroup_procs_.data();
  plan->cgroup_proc_count = static_cast<int>(cgroup_procs_.size());
  plan->namespace_types = namespace_types_.data();
  plan->namespace_fds = namespace_fds_.data();
  plan->namespace_count = static_cast<int>(namespace_fds_.size());
  if (!request.hostname.empty()) {
    plan->hostname = request.hostname.c_str();
    plan->hostname_length = static_cast<int>(request.hostname.size());
  }
  plan->mount_sources = mount_sources_.data();
  plan->mount_targets = mount_targets_.data();
  plan->mount_types = mount_types_.data();
  plan->mount_data = mount_data_.data();
  plan->mount_flags = mount_flags_.data();
  plan->mount_remount_flags = mount_remount_flags_.data();
  plan->mount_propagation = mount_propagation_.data();
  plan->mount_count = static_cast<int>(mounts_.size());
  plan->pivot_root = request.pivot_root;
  plan->run_in_child = request.run_in_child ? &request.run_in_child : nullptr;
}

}  // namespace shim::spawn
