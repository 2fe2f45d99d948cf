// The Status of a child that failed between clone and exec: each ChildStep's own text,
// naming what failed ("spawn sh: setuid: Operation not permitted").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "process/spawn_child.h"
#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim::spawn {

// What the texts name, besides the request.
struct ChildErrorContext {
  const SpawnRequest& request;
  const std::vector<int>& parent_fds;  // the fd map, by report index (kFds)
  const std::vector<int>& child_fds;
  const std::vector<std::string>& candidates;  // the search's (kExec, kFoundRelative)
  // The files the child wrote to join its cgroups (kCgroup): on v1 the `tasks` beside
  // each of the request's cgroup_procs.
  const char* const* cgroup_files = nullptr;
  int cgroup_file_count = 0;
};

// A short name of `step` ("setuid", "chroot").
std::string_view step_name(ChildStep step);

// The error for `report` (never OK for a failing step).
Status child_error(const ChildErrorContext& context, const ChildReport& report);

}  // namespace shim::spawn
