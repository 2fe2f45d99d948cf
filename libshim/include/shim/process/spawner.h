// Spawner: starts a child process (fork+exec semantics) for the shim and its plug-ins.
// An interface so tests can substitute it; PosixSpawner (shim/posix_spawner.h) is the
// real one.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shim/process/process_handle.h"
#include "shim/status.h"

namespace shim {

struct SpawnRequest {
  // The executable. Without a '/', it is looked up in the shim's PATH.
  std::string path;
  // argv[0] included. Empty: {path}.
  std::vector<std::string> argv;
  // "KEY=value" entries. std::nullopt: the shim's own environment.
  std::optional<std::vector<std::string>> env;
  // Working directory of the child. Empty: the shim's. (The shim itself never chdirs.)
  std::string cwd;
  // {child fd, parent fd}: the child sees `parent fd` as `child fd`. Child fds 0-2 not
  // listed are /dev/null. Every other fd is closed in the child, so nothing the shim
  // holds reaches the runtime (CVE-2024-21626 class of leaks).
  std::vector<std::pair<int, int>> fds;
  bool new_process_group = false;  // setpgid(0, 0)
  bool setsid = false;             // a new session (and so a new process group)
  // PR_SET_PDEATHSIG. Linux sends it when the *thread* that spawned the child exits, not
  // the process: spawn from long-lived threads (the WorkPool), never from a short-lived
  // std::thread.
  std::optional<int> parent_death_signal;
};

struct SpawnedProcess {
  // The child's pid. When the exec failed this is still the pid of the child that
  // failed (already reaped, by the spawner or by whoever reaped it first), so a reaper can
  // drop its exit; -1 when no child was created.
  pid_t pid = -1;
  ProcessHandle handle;  // pidfd from clone(CLONE_PIDFD) where the kernel has it
};

class Spawner {
 public:
  virtual ~Spawner() = default;

  // Starts `request`. Returns once the child has exec'd (or failed to): an exec failure
  // is an error Status "exec <path>: <strerror>" (chdir and fd setup failures likewise
  // name their step). Thread-safe; never holds a lock across the fork/exec.
  virtual Status spawn(const SpawnRequest& request, SpawnedProcess* process) = 0;
};

}  // namespace shim
