#include "shim/linux/container_cgroup.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "gocompat/go_compat.h"
#include "linux/cgroup_file.h"
#include "linux/container_cgroup_resources.h"

namespace shim {
namespace {

using namespace std::chrono_literals;

// The v1 hierarchies mounted under `root`: real directories only ("cpu" and "cpuacct"
// are links to "cpu,cpuacct"), the v2 "unified" one of a hybrid host left out.
std::vector<std::string> v1_hierarchies(const std::string& root) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == ".." || name == "unified") continue;
    struct stat st {};
    if (::lstat((root + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

// The controller names a v1 hierarchy holds: "cpu,cpuacct" -> cpu, cpuacct.
std::vector<std::string> controllers_of(const std::string& hierarchy) {
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos <= hierarchy.size();) {
    std::size_t comma = hierarchy.find(',', pos);
    if (comma == std::string::npos) comma = hierarchy.size();
    out.push_back(hierarchy.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

bool blank(std::string_view text) {
  return text.find_first_not_of(" \t\n") == std::string_view::npos;
}

// mkdir -p `path` below `base` (which exists); the leaf, when new, in *created (levels
// above it may be shared with other containers: runc leaves them too).
// cpuset: a new level starts with empty cpus and mems, which no process may join (ENOSPC).
// A level that exists may be one another Create made a moment ago and has not filled
// yet, so each level's empty ones take the parent's values, as runc's
// cpusetCopyIfNeeded does (libcontainer/cgroups/fs/cpuset.go).
Status make_levels(const std::string& base, const std::string& path, bool cpuset,
                   std::vector<std::string>* created) {
  std::string dir = base;
  for (std::size_t pos = 1; pos <= path.size();) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    std::string parent = dir;
    dir += "/" + path.substr(pos, slash - pos);
    pos = slash + 1;
    bool made = ::mkdir(dir.c_str(), 0755) == 0;
    if (!made && errno != EEXIST)
      return unknown(fmt::format("cgroup: mkdir {}: {}", dir, std::strerror(errno)));
    if (made && slash == path.size()) created->push_back(dir);
    if (!cpuset) continue;
    for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
      std::string own;
      if (!made && (!go_read_file(dir + "/" + file, &own).ok() || !blank(own))) continue;
      std::string value;
      if (go_read_file(parent + "/" + file, &value).ok()) {
        if (Status s = write_control_file(dir + "/" + file, value); !s.ok()) return s;
      }
    }
  }
  return {};
}

Status remove_dir(const std::string& dir) {
  for (auto deadline = std::chrono::steady_clock::now() + 1s;;) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return {};
    if (errno != EBUSY || std::chrono::steady_clock::now() > deadline)
      return unknown(fmt::format("cgroup: rmdir {}: {}", dir, std::strerror(errno)));
    std::this_thread::sleep_for(10ms);
  }
}

// Writes `value` into `file`, then waits until `done` holds for what `check` reads.
Status set_and_wait(const std::string& file, std::string_view value, const std::string& check,
                    std::string_view done) {
  if (Status s = write_control_file(file, value); !s.ok()) return s;
  for (auto deadline = std::chrono::steady_clock::now() + 1s;;) {
    std::string text;
    if (Status s = go_read_file(check, &text); !s.ok()) return s;
    if (text.find(done) != std::string::npos) return {};
    if (std::chrono::steady_clock::now() > deadline)
      return unknown(fmt::format("cgroup: {} did not reach {:?} within 1s", check, done));
    std::this_thread::sleep_for(1ms);
  }
}

}  // namespace

Status ContainerCgroup::create(const CgroupFs& fs, CgroupVersion version, const std::string& path,
                               const boost::json::object& resources, ContainerCgroup* out) {
  *out = ContainerCgroup{};
  if (path.empty() || path.front() != '/' || path.find(':') != std::string::npos) {
    return invalid_argument(
        fmt::format("cgroup path {:?}: only absolute cgroupfs paths are made by the shim", path));
  }
  if (Status s = check_cgroup_resources(resources); !s.ok()) return s;
  std::string clean = go_clean_path(path);
  out->fs_ = fs;
  out->paths_.version = version;
  Status status;
  if (version == CgroupVersion::kV2) {
    out->paths_.unified = fs.root + clean;
    status = make_levels(fs.root, clean, false, &out->created_);
    if (status.ok()) enable_v2_controllers(fs, out->paths_).ignore_error();  // as Go: best effort
  } else {
    for (const std::string& hierarchy : v1_hierarchies(fs.root)) {
      bool cpuset = hierarchy == "cpuset";
      status = make_levels(fs.root + "/" + hierarchy, clean, cpuset, &out->created_);
      if (!status.ok()) break;
      for (const std::string& controller : controllers_of(hierarchy))
        out->paths_.controllers[controller] = fs.root + "/" + hierarchy + clean;
    }
  }
  if (status.ok()) status = apply_cgroup_resources(out->paths_, resources);
  if (!status.ok()) out->remove().ignore_error();  // the error to report is `status`
  return status;
}

std::vector<std::string> ContainerCgroup::procs_files() const {
  std::vector<std::string> files;
  if (paths_.version == CgroupVersion::kV2) return {paths_.unified + "/cgroup.procs"};
  for (const auto& [controller, dir] : paths_.controllers) {
    std::string file = dir + "/cgroup.procs";
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  return files;
}

Status ContainerCgroup::update(const boost::json::object& resources) {
  return apply_cgroup_resources(paths_, resources);
}

Status ContainerCgroup::freeze() { return set_frozen(true); }

Status ContainerCgroup::thaw() { return set_frozen(false); }

Status ContainerCgroup::set_frozen(bool frozen) {
  if (paths_.version == CgroupVersion::kV2) {
    return set_and_wait(paths_.unified + "/cgroup.freeze", frozen ? "1" : "0",
                        paths_.unified + "/cgroup.events", frozen ? "frozen 1" : "frozen 0");
  }
  std::string dir = paths_.dir("freezer");
  if (dir.empty()) {
    return failed_precondition(
        fmt::format("cgroup: no freezer controller to {} with", frozen ? "pause" : "resume"));
  }
  std::string_view state = frozen ? "FROZEN" : "THAWED";
  return set_and_wait(dir + "/freezer.state", state, dir + "/freezer.state", state);
}

Status ContainerCgroup::remove() {
  Status first;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    if (Status s = remove_dir(*it); !s.ok() && first.ok()) first = s;
  }
  created_.clear();
  return first;
}

}  // namespace shim
