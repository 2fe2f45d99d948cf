// Spawner: starts a child process (fork+exec semantics) for the shim and its plug-ins.
// An interface so tests can substitute it; the real one is libshim's clone+exec spawner,
// which the daemon hands out as ServiceContext::spawner (and an action as
// ActionContext::spawner).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shim/process/process_handle.h"
#include "shim/status.h"

namespace shim {

// Who a spawned process runs as (SpawnRequest::user).
struct SpawnUser {
  uid_t uid = 0;                       // setuid(2): real, effective and saved uid
  gid_t gid = 0;                       // setgid(2): real, effective and saved gid
  std::vector<gid_t> additional_gids;  // setgroups(2): exactly these (empty: none)
};

// One resource limit of a spawned process (SpawnRequest::rlimits).
struct SpawnRlimit {
  int resource = 0;        // RLIMIT_NOFILE, RLIMIT_CORE, ... (<sys/resource.h>)
  std::uint64_t soft = 0;  // rlim_cur (RLIM_INFINITY: unlimited)
  std::uint64_t hard = 0;  // rlim_max (RLIM_INFINITY: unlimited)
};

// The capability sets of a spawned process (SpawnRequest::capabilities), one bit per
// capability number (bit CAP_CHOWN, bit CAP_KILL, ...).
struct CapabilitySets {
  std::uint64_t bounding = 0;     // every capability not here is dropped from the bounding set
  std::uint64_t effective = 0;    // capset(2)
  std::uint64_t permitted = 0;    // capset(2)
  std::uint64_t inheritable = 0;  // capset(2)
  std::uint64_t ambient = 0;      // raised after capset (each must be permitted and inheritable)
};

// A mount a spawned process makes in its new mount namespace (SpawnRequest::mounts),
// before it enters its root: an OCI mount.
struct SpawnMount {
  std::string source;                // a host path for a bind mount; "tmpfs"...
  std::string target;                // where, inside SpawnRequest::root ("/etc/hosts")
  std::string type;                  // "bind", "tmpfs", ... (a bind also by its options)
  std::vector<std::string> options;  // fstab style: "rbind", "ro", "nosuid", "size=64m"
};

// What to start, and how: a process, optionally in namespaces and a root of its own.
struct SpawnRequest {
  // The executable. Without a '/', it is looked up in the shim's PATH, unless
  // `search_path` says otherwise.
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

  // The process's own settings, as an OCI runtime applies them (runc's order; see
  // libshim/src/process/spawn_child.cpp). Each failing step is an error naming it
  // ("spawn sh: setuid 1000: Operation not permitted"). All of it is done before a
  // held child waits at its gate, so a create reports it.
  //
  // Written to /proc/self/oom_score_adj first (-1000..1000); nullopt: inherited.
  std::optional<int> oom_score_adj;
  // fd 0, a terminal, becomes the controlling terminal of a new session (setsid, which
  // this implies, then TIOCSCTTY), as for an OCI process with `terminal`.
  bool controlling_terminal = false;
  // umask(2), after chroot and cwd; nullopt: the shim's.
  std::optional<mode_t> umask;
  // setrlimit(2) each, while the child may still raise hard limits.
  std::vector<SpawnRlimit> rlimits;
  // PR_SET_NO_NEW_PRIVS: execve can grant no privilege (setuid bits, file capabilities).
  bool no_new_privileges = false;
  // Set the bounding set, then keep capabilities across the change of user, capset(2)
  // and raise the ambient ones. Capabilities this kernel does not know (beyond
  // /proc/sys/kernel/cap_last_cap) are left out, as runc does. nullopt: the shim's.
  std::optional<CapabilitySets> capabilities;
  // setgroups, setgid, setuid (after the bounding set, keeping the permitted
  // capabilities for capset). The child's fds 0-2 are first chowned to the uid (unless
  // /dev/null, or refused with EPERM/EROFS), as runc does, so the user may reopen them
  // (/dev/stdout). nullopt: the shim's user.
  std::optional<SpawnUser> user;
  // A ':'-separated list of directories (an empty entry means ".") in which a `path`
  // without '/' is looked up *in the child*, after root, cwd, user and capabilities are
  // applied: the first entry holding a non-directory the process may execute, as Go's
  // exec.LookPath does in runc. Not found: "exec: \"<path>\": executable file not
  // found in $PATH"; found only through a relative entry: "...: cannot run executable
  // found relative to current directory". nullopt: the shim's own PATH, in the parent.
  std::optional<std::string> search_path;

  // For runtimes that make containers without an OCI CLI (a fork server's children,
  // shim/process/fork_server.h), around the steps above:
  // First, before the namespaces: the cgroup.procs files the child writes itself into
  // (a container's cgroup; on v1 one per controller), so it never runs outside it. On
  // v1 the child writes the `tasks` file beside each: still single-threaded, it so
  // moves without the kernel's global lock and its RCU grace period (kernels that skip
  // that lock for a thread moving itself: measured on 6.18).
  std::vector<std::string> cgroup_procs;
  // Namespace files the child enters after `join_pidfd`'s, each {CLONE_NEW* type, an
  // open fd of /proc/<pid>/ns/<type> or of a bind mount of one, like a CNI netns}.
  // CLONE_NEWPID: the child is created in that pid namespace.
  std::vector<std::pair<int, int>> join_namespace_files;
  // sethostname(2), in the new UTS namespace (needs CLONE_NEWUTS).
  std::string hostname;
  // Mounts made in the new mount namespace, in order, before `root` is entered (needs
  // CLONE_NEWNS and a root). Each target is resolved inside `root` by the parent (".."
  // and symlinks cannot lead out of it) and created there when missing: for a bind
  // mount what its source is (a directory or an empty file), else a directory. A bind
  // mount's "ro", "nosuid", "nodev" and "noexec" take effect by a remount; propagation
  // options ("rprivate") by a mount of their own, as runc does.
  std::vector<SpawnMount> mounts;
  // With `root` and CLONE_NEWNS: pivot_root(2) into it instead of chroot, and detach the
  // old root, so nothing of the host stays reachable in the namespace (chroot can be left
  // with CAP_SYS_CHROOT) and a process that joins the mount namespace later is in `root`.
  bool pivot_root = false;
  // CLONE_PARENT: the child's parent is the spawning process's parent, so a fork
  // server's children are reaped by the shim that started the server, as its own.
  bool clone_parent = false;
  // Instead of execve: the child calls this (after the gate of a `hold` request) and
  // exits with what it returns; `path` is then only a name for messages. The child is a
  // copy of the spawning process, which must be single-threaded (a fork server: an
  // engine loaded once, a child per container). Anything it throws ends it (status 127).
  std::function<int()> run_in_child;
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
  // Its fds, still owned by the gate: a fork server sends copies to the process that
  // will release the child (shim/process/fork_server.h), then drops its own gate.
  int go_fd() const { return go_fd_; }
  int result_fd() const { return result_fd_; }
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
