// What a pod leaves on the host, read from /proc and /sys: shim processes, mounts,
// cgroups, runc state, and a process's memory and CPU figures.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace shim::test::cri {

struct ShimProcess {
  pid_t pid = 0;
  std::string exe;  // /proc/<pid>/exe target
  std::string id;   // the -id flag
};

// Shim processes started by the containerd at `grpc_address` (their argv names it).
std::vector<ShimProcess> shim_processes(const std::string& grpc_address);

// Mount points at or below `dir` (this mount namespace).
std::vector<std::string> mounts_under(const std::string& dir);

// Cgroup directories named `relative` (e.g. "/parent/id") under any controller.
std::vector<std::string> cgroup_dirs(const std::string& relative);

// The value of a cgroup v1 file of `relative` under `controller`, trimmed; empty if none.
std::string cgroup_value(const std::string& controller, const std::string& relative,
                         const std::string& file);

// Whether a process exists (kill(pid, 0)), and its PSS in KiB (smaps_rollup).
bool process_alive(pid_t pid);
long pss_kib(pid_t pid);
// utime + stime of `pid` in clock ticks.
long cpu_ticks(pid_t pid);

// `root` and every process below it (read from /proc/<pid>/stat).
std::vector<pid_t> process_tree(pid_t root);

// Entries under `dir` (non-recursive names); empty when it does not exist.
std::vector<std::string> dir_entries(const std::string& dir);

}  // namespace shim::test::cri
