#include "shim/linux/cgroup.h"
#include "linux/cgroup_metrics.h"

#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "gocompat/go_compat.h"
#include "linux/cgroup_file.h"
#include "shim/logger.h"

namespace shim {

namespace {

// The root of the v1 mount carrying `controller` as seen in mountinfo (field 4), or ""
// when there is none. Go's getCgroupDestination: fstype "cgroup", super options list it.
std::string mount_root(const std::string& mountinfo, const std::string& controller) {
  for (std::string_view line : split_lines(mountinfo)) {
    std::vector<std::string_view> fields;
    for (std::size_t pos = 0;;) {
      std::size_t space = line.find(' ', pos);
      fields.push_back(line.substr(pos, space - pos));
      if (space == std::string_view::npos) break;
      pos = space + 1;
    }
    if (fields.size() < 10 || fields[fields.size() - 3] != "cgroup") continue;
    std::string_view options = fields.back();
    for (std::size_t pos = 0;;) {
      std::size_t comma = options.find(',', pos);
      if (options.substr(pos, comma - pos) == controller) return std::string(fields[3]);
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
  }
  return "";
}

// `path` relative to the mount root `root` (the cgroup seen from inside a cgroup
// namespace), as an absolute path under the mount point.
std::string relative_to_mount(const std::string& path, const std::string& root) {
  if (root.empty() || root == "/") return path;
  if (path == root) return "/";
  if (path.starts_with(root) && path[root.size()] == '/') return path.substr(root.size());
  return path;
}

// The directory name of a v1 hierarchy: "name=systemd" is mounted as systemd/.
std::string hierarchy_dir(const std::string& controller) {
  constexpr std::string_view kNamed = "name=";
  if (controller.starts_with(kNamed)) return controller.substr(kNamed.size());
  return controller;
}

shim::Status read_proc_cgroup(const CgroupFs& fs, int pid, ProcCgroup* parsed) {
  std::string path = fmt::format("{}/{}/cgroup", fs.proc, pid);
  std::string text;
  shim::Status status = go_read_file(path, &text);
  if (!status.ok()) {
    return shim::Status(shim::Code::kNotFound,
                        fmt::format("parse cgroup file {}: {}", path, status.message()));
  }
  return parse_proc_cgroup(text, parsed);
}

shim::Status load_v1(const CgroupFs& fs, const ProcCgroup& parsed, CgroupPaths* out) {
  std::string mountinfo;
  // Without mountinfo the paths are taken as they are (the host's view).
  (void)go_read_file(fs.proc + "/self/mountinfo", &mountinfo);
  out->version = CgroupVersion::kV1;
  out->controllers.clear();
  for (const auto& [controller, path] : parsed.controllers) {
    std::string local = relative_to_mount(path, mount_root(mountinfo, controller));
    std::string dir = go_join_path(go_join_path(fs.root, hierarchy_dir(controller)), local);
    if (path_exists(dir)) out->controllers[controller] = dir;
  }
  if (out->controllers.empty())
    return shim::Status(shim::Code::kNotFound, "cgroups: cgroup deleted");
  return {};
}

shim::Status load_v2(const CgroupFs& fs, const ProcCgroup& parsed, CgroupPaths* out) {
  if (!parsed.has_unified) return shim::Status(shim::Code::kNotFound, "cgroup path not found");
  out->version = CgroupVersion::kV2;
  out->unified = go_join_path(fs.root, parsed.unified);
  return {};
}

}  // namespace

CgroupVersion host_cgroup_version(const std::string& root) {
  struct statfs st {};
  if (::statfs(root.c_str(), &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC)
    return CgroupVersion::kV2;
  return CgroupVersion::kV1;
}

shim::Status parse_proc_cgroup(std::string_view text, ProcCgroup* out) {
  *out = ProcCgroup{};
  for (std::string_view line : split_lines(text)) {
    std::size_t first = line.find(':');
    std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos)
      return shim::unknown(fmt::format("invalid cgroup entry: {}", shim::go_quote(line)));
    std::string_view names = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (names.empty()) {
      out->unified = path;
      out->has_unified = true;
      continue;
    }
    for (std::size_t pos = 0;;) {
      std::size_t comma = names.find(',', pos);
      std::string_view name = names.substr(pos, comma - pos);
      if (name.empty()) {
        out->unified = path;  // Go treats an empty name in a list as the unified entry
        out->has_unified = true;
      } else {
        out->controllers[std::string(name)] = path;
      }
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
  }
  return {};
}

std::string CgroupPaths::dir(std::string_view controller) const {
  if (version == CgroupVersion::kV2) return unified;
  auto it = controllers.find(std::string(controller));
  return it == controllers.end() ? std::string() : it->second;
}

shim::Status load_cgroup(const CgroupFs& fs, CgroupVersion version, int pid, CgroupPaths* out) {
  ProcCgroup parsed;
  shim::Status status = read_proc_cgroup(fs, pid, &parsed);
  if (!status.ok()) return status;
  *out = CgroupPaths{};
  if (version == CgroupVersion::kV2) return load_v2(fs, parsed, out);
  return load_v1(fs, parsed, out);
}

shim::Status collect_metrics_any(const CgroupFs& fs, const CgroupPaths* paths, shim::pb::Any* out) {
  if (paths == nullptr) return shim::not_found("cgroup does not exist");
  if (paths->version == CgroupVersion::kV2) {
    cgroups_v2::Metrics metrics;
    shim::Status status = collect_v2_metrics(fs, *paths, &metrics);
    if (!status.ok()) return status;
    out->set_type_url(std::string(kCgroupsV2MetricsType));
    out->set_value(metrics.SerializeAsString());
    return {};
  }
  cgroups_v1::Metrics metrics;
  shim::Status status = collect_v1_metrics(fs, *paths, &metrics);
  if (!status.ok()) return status;
  out->set_type_url(std::string(kCgroupsV1MetricsType));
  out->set_value(metrics.SerializeAsString());
  return {};
}

shim::Status enable_v2_controllers(const CgroupFs& fs, const CgroupPaths& paths) {
  if (paths.version != CgroupVersion::kV2) return {};
  std::string available;
  shim::Status status = go_read_file(fs.root + "/cgroup.controllers", &available);
  if (!status.ok()) return status;
  std::string request;
  for (std::string_view controller : split_fields(available)) {
    if (!request.empty()) request += ' ';
    request += fmt::format("+{}", controller);
  }
  std::string root = go_clean_path(fs.root);
  std::string target = go_clean_path(paths.unified);
  if (!target.starts_with(root)) return {};
  shim::Status last;
  // Ancestors from the root down: root, root/a, root/a/b for target root/a/b/c.
  for (std::size_t end = root.size(); end < target.size(); end = target.find('/', end + 1)) {
    std::string ancestor = target.substr(0, end);
    last = write_control_file(ancestor + "/cgroup.subtree_control", request);
  }
  return last;
}

namespace {

// cgroup.procs of `dir`, then of its sub-cgroups depth first in name order: runc's
// GetAllPids (libcontainer/cgroups/utils.go, a filepath.Walk), which `runc ps` lists.
shim::Status append_cgroup_pids(const std::string& dir, std::vector<std::uint32_t>* pids) {
  std::string text;
  if (shim::Status s = go_read_file(dir + "/cgroup.procs", &text); !s.ok()) return s;
  for (std::string_view line : split_lines(text)) {
    std::uint64_t pid = 0;
    if (!parse_uint_strict(go_trim_space(line), &pid).ok()) continue;
    pids->push_back(static_cast<std::uint32_t>(pid));
  }
  std::error_code ec;
  std::vector<std::string> children;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec) && !entry.is_symlink(type_ec)) children.push_back(entry.path());
  }
  std::sort(children.begin(), children.end());
  for (const std::string& child : children) {
    // A sub-cgroup removed meanwhile has no processes left to report.
    if (shim::Status s = append_cgroup_pids(child, pids);
        !s.ok() && ::access(child.c_str(), F_OK) == 0) {
      return s;
    }
  }
  return {};
}

}  // namespace

shim::Status read_cgroup_pids(const CgroupPaths& paths, std::vector<std::uint32_t>* pids) {
  // v1: any controller lists the same tasks; prefer the ones every runtime sets up.
  std::string dir = paths.unified;
  if (paths.version == CgroupVersion::kV1) {
    for (const char* controller : {"pids", "memory", "cpu", "freezer"}) {
      dir = paths.dir(controller);
      if (!dir.empty()) break;
    }
    if (dir.empty() && !paths.controllers.empty()) dir = paths.controllers.begin()->second;
  }
  if (dir.empty()) return shim::not_found("cgroup does not exist");
  pids->clear();
  // runc ps of a stopped container whose cgroup is gone lists nothing (Processes()).
  if (::access(dir.c_str(), F_OK) != 0 && errno == ENOENT) return {};
  return append_cgroup_pids(dir, pids);
}

}  // namespace shim
