// The cgroup v1 and v2 metrics collectors behind collect_metrics_any()
// (shim/linux/cgroup.h): containerd's cgroups library's Stat semantics, into the
// io.containerd.cgroups.v1/v2 Metrics messages.
#pragma once

#include <string_view>

#include "shim/linux/cgroup.h"
#include "shim/pb/cgroups/v1_metrics.pb.h"
#include "shim/pb/cgroups/v2_metrics.pb.h"
#include "shim/status.h"

namespace shim {

namespace cgroups_v1 = io::containerd::cgroups::v1;
namespace cgroups_v2 = io::containerd::cgroups::v2;

inline constexpr std::string_view kCgroupsV1MetricsType = "io.containerd.cgroups.v1.Metrics";
inline constexpr std::string_view kCgroupsV2MetricsType = "io.containerd.cgroups.v2.Metrics";

// Fills `out` from the v1 controllers in `paths` (memory, cpu, cpuacct, pids, blkio,
// hugetlb, rdma) with the library's Stat(IgnoreNotExist) semantics: a missing file ends
// that controller's part silently (what it filled so far stays); any other read or parse
// error fails the whole call with the Go error text (code Unknown).
shim::Status collect_v1_metrics(const CgroupFs& fs, const CgroupPaths& paths,
                                cgroups_v1::Metrics* out);

// Fills `out` from the v2 cgroup directory with the v3 library's Manager.Stat semantics:
// missing files give zeros ("max" -> UINT64_MAX); a malformed cpu.stat, memory.stat or
// memory.events fails the call (code Unknown).
shim::Status collect_v2_metrics(const CgroupFs& fs, const CgroupPaths& paths,
                                cgroups_v2::Metrics* out);

}  // namespace shim
