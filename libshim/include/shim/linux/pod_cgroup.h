// The pod's cgroup on the host (PodSandboxConfig.linux.cgroup_parent, which kubelet makes
// and names for its cgroup driver) and SandboxMetrics from it: what a sandbox reports for
// the pod as a whole (libshim's pods without a pause container; a VM runtime whose VM
// runs in the pod's cgroup).
//
// Threading: blocking file IO; any thread (the work pool).
#pragma once

#include <string>
#include <string_view>

#include "shim/linux/cgroup.h"
#include "shim/pb/any.pb.h"
#include "shim/status.h"

namespace shim {

// The cgroup path of a cgroup parent: a systemd slice name ("kubepods-besteffort-pod<uid>
// .slice", kubelet's systemd driver) expands as runc's systemd.ExpandSlice does to
// "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice" ("-.slice"
// is "/"); a cgroupfs path ("/kubepods/besteffort/pod<uid>") is kept, made absolute.
// InvalidArgument for a slice name with an empty part ("a--b.slice") or a '/' in it.
Status expand_cgroup_parent(std::string_view parent, std::string* path);

// The directories of `path` (from expand_cgroup_parent) under `fs.root`: v2 the one
// directory, v1 each controller's that exists (<root>/<controller><path>). NotFound naming
// the cgroup when none exists.
Status pod_cgroup_paths(const CgroupFs& fs, CgroupVersion version, const std::string& path,
                        CgroupPaths* out);

// SandboxMetrics' data: io.containerd.cgroups.v1.Metrics (v1 and hybrid hosts) or v2
// of the pod's cgroup. NotFound with a clear text without a cgroup parent or cgroup.
Status pod_cgroup_metrics(const CgroupFs& fs, const std::string& cgroup_parent, pb::Any* data);

}  // namespace shim
