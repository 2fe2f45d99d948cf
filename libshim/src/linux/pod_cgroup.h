// The pod's cgroup (PodSandboxConfig.linux.cgroup_parent, which kubelet makes and names
// for its cgroup driver) and SandboxMetrics from it.
#pragma once

#include <string>
#include <string_view>

#include "shim/linux/cgroup.h"
#include "shim/pb/any.pb.h"
#include "shim/status.h"

namespace shim::linux_pod {

// The cgroup path of a cgroup parent: a systemd slice name ("kubepods-besteffort-pod<uid>
// .slice", kubelet's systemd driver) expands as runc's systemd.ExpandSlice does to
// "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice" ("-.slice"
// is "/"); a cgroupfs path ("/kubepods/besteffort/pod<uid>") is kept, made absolute.
// InvalidArgument for a slice name with an empty part ("a--b.slice") or a '/' in it.
shim::Status expand_cgroup_parent(std::string_view parent, std::string* path);

// The directories of `path` (from expand_cgroup_parent) under `fs.root`: v2 the one
// directory, v1 each controller's that exists (<root>/<controller><path>). NotFound naming
// the cgroup when none exists.
shim::Status pod_cgroup_paths(const shim::CgroupFs& fs, shim::CgroupVersion version,
                              const std::string& path, shim::CgroupPaths* out);

// SandboxMetrics' data: io.containerd.cgroups.v1.Metrics (v1 and hybrid hosts) or v2
// of the pod's cgroup. NotFound with a clear text without a cgroup parent or cgroup.
shim::Status pod_cgroup_metrics(const shim::CgroupFs& fs, const std::string& cgroup_parent,
                                shim::pb::Any* data);

}  // namespace shim::linux_pod
