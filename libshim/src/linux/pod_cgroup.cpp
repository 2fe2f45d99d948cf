#include "shim/linux/pod_cgroup.h"

#include <sys/stat.h>

#include <fmt/format.h>

namespace shim {

namespace {

constexpr std::string_view kSliceSuffix = ".slice";

// The v1 controllers whose statistics collect_metrics_any() reads, and the ones kubelet
// always creates (to tell an existing pod cgroup from a missing one).
constexpr std::string_view kV1Controllers[] = {"blkio",  "cpu",  "cpuacct", "cpuset",  "hugetlb",
                                               "memory", "pids", "rdma",    "freezer", "devices"};

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// runc libcontainer/cgroups/systemd/common.go ExpandSlice, reimplemented.
shim::Status expand_slice(std::string_view slice, std::string* path) {
  auto bad = [&](std::string_view why) {
    return shim::Status(shim::Code::kInvalidArgument,
                        fmt::format("cgroup parent {:?}: {}", slice, why));
  };
  std::string_view name = slice.substr(0, slice.size() - kSliceSuffix.size());
  if (name.find('/') != std::string_view::npos) return bad("a slice name has no '/'");
  if (name == "-") {
    path->assign(1, '/');  // not `= "/"`: GCC 12 warns -Wrestrict (a false positive) on it
    return {};
  }
  // Each part's slice is named by the parts up to it: a-b-c -> a, a-b, a-b-c.
  std::string out;
  std::size_t start = 0;
  for (;;) {
    std::size_t dash = name.find('-', start);
    std::size_t end = dash == std::string_view::npos ? name.size() : dash;
    if (end == start) return bad("empty part in a slice name");
    out += fmt::format("/{}{}", name.substr(0, end), kSliceSuffix);
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  *path = std::move(out);
  return {};
}

}  // namespace

shim::Status expand_cgroup_parent(std::string_view parent, std::string* path) {
  if (parent.ends_with(kSliceSuffix) && parent.find('/') == std::string_view::npos) {
    return expand_slice(parent, path);
  }
  *path = parent.starts_with('/') ? std::string(parent) : fmt::format("/{}", parent);
  while (path->size() > 1 && path->back() == '/') path->pop_back();
  return {};
}

shim::Status pod_cgroup_paths(const shim::CgroupFs& fs, shim::CgroupVersion version,
                              const std::string& path, shim::CgroupPaths* out) {
  *out = shim::CgroupPaths{};
  out->version = version;
  std::string suffix = path == "/" ? std::string() : path;
  if (version == shim::CgroupVersion::kV2) {
    out->unified = fmt::format("{}{}", fs.root, suffix);
    if (is_dir(out->unified)) return {};
    return shim::not_found(fmt::format("pod cgroup {}", out->unified));
  }
  for (std::string_view controller : kV1Controllers) {
    std::string dir = fmt::format("{}/{}{}", fs.root, controller, suffix);
    if (is_dir(dir)) out->controllers.emplace(controller, dir);
  }
  if (!out->controllers.empty()) return {};
  return shim::not_found(fmt::format("pod cgroup {} (under any controller of {})", path, fs.root));
}

shim::Status pod_cgroup_metrics(const shim::CgroupFs& fs, const std::string& cgroup_parent,
                                shim::pb::Any* data) {
  if (cgroup_parent.empty()) {
    return shim::not_found("pod metrics: the pod has no cgroup parent (linux.cgroup_parent)");
  }
  std::string path;
  if (shim::Status s = expand_cgroup_parent(cgroup_parent, &path); !s.ok()) return s;
  shim::CgroupPaths paths;
  shim::Status found = pod_cgroup_paths(fs, shim::host_cgroup_version(fs.root), path, &paths);
  if (!found.ok())
    return shim::Status(found.code(), fmt::format("pod metrics: {}", found.message()));
  return shim::collect_metrics_any(fs, &paths, data);
}

}  // namespace shim
