// A container's cgroup, found from /proc/<pid>/cgroup the way the Go runc shim finds it
// at Create, and the cgroup metrics its Stats RPC returns (containerd's cgroups library:
// io.containerd.cgroups.v1.Metrics on v1 and hybrid hosts, ...v2.Metrics on unified
// ones). The paths are resolved once and kept, so stats and OOM checks still work after
// the container's processes exited.
//
// Everything here does blocking file IO: run it on the work pool.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shim/pb/any.pb.h"
#include "shim/status.h"

namespace shim {

// Where the cgroup filesystems and the other kernel files the collectors read live.
// The defaults are the host's; tests point them into a temp dir.
struct CgroupFs {
  std::string root = "/sys/fs/cgroup";  // v1: holds <controller>/ dirs; v2: the unified mount
  std::string proc = "/proc";           // <pid>/cgroup, self/mountinfo, partitions
  std::string hugepages = "/sys/kernel/mm/hugepages";  // hugepage sizes (hugetlb statistics)
};

// cgroup v1 (one hierarchy per controller) or v2 (one unified hierarchy).
enum class CgroupVersion { kV1, kV2 };

// The host's mode as containerd's cgroups.Mode() sees it, reduced to what the runc shim
// uses: v2 only when `root` itself is a cgroup2 mount (unified). Legacy and hybrid
// (v1 controllers plus /sys/fs/cgroup/unified) are v1.
CgroupVersion host_cgroup_version(const std::string& root = "/sys/fs/cgroup");

// /proc/<pid>/cgroup, split: "4:memory:/a" and "3:cpu,cpuacct:/b" give controllers
// {memory: /a, cpu: /b, cpuacct: /b}; "1:name=systemd:/c" gives {name=systemd: /c};
// "0::/d" gives the unified path /d.
struct ProcCgroup {
  std::map<std::string, std::string> controllers;  // controller -> path (each of a line's)
  std::string unified;                             // the "0::" line's path
  bool has_unified = false;                        // whether there was a "0::" line
};
// Unknown `invalid cgroup entry: "<line>"` for a line without two colons.
shim::Status parse_proc_cgroup(std::string_view text, ProcCgroup* out);

// A loaded cgroup: absolute directories.
struct CgroupPaths {
  CgroupVersion version = CgroupVersion::kV1;  // v1: `controllers` hold the paths; v2: `unified`
  // v1: controller name -> its cgroup directory ("memory" -> /sys/fs/cgroup/memory/x/y),
  // only controllers whose directory existed at load time.
  std::map<std::string, std::string> controllers;
  std::string unified;  // v2: the cgroup directory (/sys/fs/cgroup/x/y)

  // v1: the directory of `controller`, "" if none. v2: `unified` for any controller.
  std::string dir(std::string_view controller) const;
};

// Loads `pid`'s cgroup like the Go shim (cgroups.Load(V1, PidPath(pid)) or
// cgroupsv2.LoadManager(root, PidGroupPath(pid))):
//  v1: each controller of /proc/<pid>/cgroup, made relative to its mount's root
//      (self/mountinfo; for a shim inside a cgroup namespace), under <root>/<name>
//      ("name=systemd" -> <root>/systemd); controllers whose directory is missing are
//      left out; none left -> NotFound "cgroups: cgroup deleted".
//  v2: <root> + the "0::" path (not checked for existence, as in Go); no such line ->
//      NotFound "cgroup path not found".
// An unreadable /proc/<pid>/cgroup (process gone) is NotFound.
shim::Status load_cgroup(const CgroupFs& fs, CgroupVersion version, int pid, CgroupPaths* out);

// The Stats RPC's answer: the metrics for `paths`' version packed in an Any
// (type_url without prefix, as the Go shim sends it). `paths` null (no cgroup was
// loaded) -> NotFound "cgroup does not exist: not found".
shim::Status collect_metrics_any(const CgroupFs& fs, const CgroupPaths* paths, shim::pb::Any* out);

// The pids in the cgroup and its sub-cgroups, as `runc ps --format json` lists them
// (cgroup.procs of the v2 cgroup or of a v1 controller's directory, in the kernel's
// order, then each sub-cgroup's, depth first in name order). NotFound when no directory
// was loaded; none when it is gone (a stopped container's); read errors as Go's.
// Blocking file reads: call it on the WorkPool.
shim::Status read_cgroup_pids(const CgroupPaths& paths, std::vector<std::uint32_t>* pids);

// What the Go shim does for v2 at init Start: writes "+<c> ..." (the controllers of
// <root>/cgroup.controllers) into cgroup.subtree_control of every ancestor of the
// container's cgroup from <root> down (not of the cgroup itself), so the container can
// use the controllers in its own sub-cgroups. Returns the last write's error only, like
// Go (EPERM on a higher level is expected when rootless). No-op for v1.
shim::Status enable_v2_controllers(const CgroupFs& fs, const CgroupPaths& paths);

}  // namespace shim
