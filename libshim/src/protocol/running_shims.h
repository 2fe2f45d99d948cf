// The shim daemons running on this machine, found by their command lines in /proc: what
// the `upgrade-all` action (upgrade_all_action.cpp) upgrades. Internal.
//
// containerd starts a shim as `<binary> -namespace NS -id ID -address ADDR start`, and
// `start` runs the daemon as `<binary> -namespace NS -id GROUP -address ADDR [-debug]`:
// no action word (protocol/start_action.cpp; the Go shim does the same, pkg/shim/shim.go).
// A live upgrade execs the new program with the same command line, so an upgraded
// daemon is still found by its first program's name.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace shim::detail {

struct RunningShim {
  pid_t pid = -1;
  std::string ns;   // its -namespace
  std::string id;   // its -id: the container, or the group (pod) whose containers it serves
  std::string exe;  // what /proc/<pid>/exe names: "<path> (deleted)" once the file is replaced
};

// What to look for: daemons whose argv[0]'s last component is `program_name`, started for
// the containerd at `grpc_address`, in namespace `ns` (any when empty).
struct ShimQuery {
  std::string program_name;
  std::string grpc_address;
  std::string ns;
};

// One /proc/<pid>/cmdline (NUL-separated words) against `query`: true and `shim`'s
// namespace and id filled if it is such a daemon.
bool daemon_of_cmdline(std::string_view cmdline, const ShimQuery& query, RunningShim* shim);

// Every matching daemon but this process, by pid. A process that ends or cannot be read
// while we look is left out.
std::vector<RunningShim> find_running_shims(const ShimQuery& query);

}  // namespace shim::detail
