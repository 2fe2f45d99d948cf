// OCI linux.resources written into a cgroup's files (shim/linux/container_cgroup.h), as
// runc's cgroupfs drivers write them (libcontainer/cgroups/fs and fs2).
#pragma once

#include <boost/json/object.hpp>

#include "shim/linux/cgroup.h"
#include "shim/status.h"

namespace shim {

// Unimplemented naming the first field of `resources` that apply_cgroup_resources cannot
// apply; InvalidArgument for a value of the wrong type.
Status check_cgroup_resources(const boost::json::object& resources);

// Writes `resources` (checked first) into the directories of `paths`.
Status apply_cgroup_resources(const CgroupPaths& paths, const boost::json::object& resources);

}  // namespace shim
