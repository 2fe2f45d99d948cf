// Spawner: starts a child process (fork+exec semantics) for the shim and its plug-ins.
// An interface so tests can substitute it; the real one is libshim's clone+exec spawner,
// which the daemon hands out as ServiceContext::spawner (and an action as
// ActionContext::spawner).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shim/process/process_handle.h"
#include "shim/status.h"

namespace shim {

// What to start, and how: a process, optionally in namespaces and a root of its own.
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

  // For runtimes that make container processes themselves (a runc-like CLI does all this
  // on its own). Applied in this order, before cwd:
  // Namespaces created for the child: CLONE_NEWPID, CLONE_NEWNS, CLONE_NEWUTS,
  // CLONE_NEWIPC, CLONE_NEWNET... A new mount namespace is made private (nothing
  // propagates back to the host).
  int new_namespaces = 0;
  // Namespaces of another process (a pidfd, e.g. a container's init) the child enters;
  // `join_namespaces` says which (CLONE_NEWPID: the child is created in that pid
  // namespace).
  int join_pidfd = -1;
  int join_namespaces = 0;  // CLONE_NEW* flags of the namespaces to enter
  // chroot(2) into this directory; cwd is then relative to it ("/" if empty).
  std::string root;
  // Mount a fresh proc at <root>/proc (needs CLONE_NEWNS, and CLONE_NEWPID to be useful).
  bool mount_proc = false;
  // Mount a tmpfs at <root>/dev with the devices every container has (null, zero, full,
  // random, urandom, tty: runc's defaults), fd/stdin/stdout/stderr links into
  // /proc/self/fd, and empty pts/ and shm/ (needs CLONE_NEWNS; <root>/dev must exist).
  bool mount_dev = false;
  // Stop after all of the above, just before exec, until SpawnedProcess::gate.release():
  // a "created" container process whose pid is known before it runs anything.
  bool hold = false;
};

// The held child of a SpawnRequest with `hold`. Destroying the gate unreleased makes the
// child exit (127) without running anything.
class ProcessGate {
 public:
  ProcessGate() = default;
  // Used by the Spawner: the child waits on `go_fd`, reports its exec on `result_fd`.
  ProcessGate(int go_fd, int result_fd, std::string path);
  ~ProcessGate();                                        // an unreleased child exits (127)
  ProcessGate(ProcessGate&& other) noexcept;             // takes over `other`'s child
  ProcessGate& operator=(ProcessGate&& other) noexcept;  // drops (ends) its own child first
  ProcessGate(const ProcessGate&) = delete;
  ProcessGate& operator=(const ProcessGate&) = delete;

  // Whether it holds a child that was not released yet.
  bool valid() const { return go_fd_ >= 0; }
  // Lets the child exec and blocks until it did ("exec <path>: <strerror>" when that
  // failed, FailedPrecondition when already released). Any thread, once.
  Status release();

 private:
  void close();

  int go_fd_ = -1;
  int result_fd_ = -1;
  std::string path_;
};

// A child that Spawner::spawn() started.
struct SpawnedProcess {
  // The child's pid. When the exec failed this is still the pid of the child that
  // failed (already reaped, by the spawner or by whoever reaped it first), so a reaper can
  // drop its exit; -1 when no child was created.
  pid_t pid = -1;
  ProcessHandle handle;  // pidfd from clone(CLONE_PIDFD) where the kernel has it
  ProcessGate gate;      // valid for a `hold` request
};

// Starts child processes for the shim and its plug-ins (see the file's description).
class Spawner {
 public:
  virtual ~Spawner() = default;

  // Starts `request`. Returns once the child has exec'd (or failed to): an exec failure
  // is an error Status "exec <path>: <strerror>" (chdir, namespace, root and fd setup
  // failures likewise name their step); with `hold`, once the child is ready to exec.
  // Thread-safe; never holds a lock across the fork/exec.
  virtual Status spawn(const SpawnRequest& request, SpawnedProcess* process) = 0;
};

}  // namespace shim
