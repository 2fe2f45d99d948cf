// A fork server: a single-threaded helper process that loaded something slow once (a
// WebAssembly engine, an interpreter) and makes each container process as a fork of
// itself, set up as a SpawnRequest asks (namespaces, cgroups, root, mounts, user,
// capabilities), running its entry function where a spawned process would exec. What
// a runtime gains: the load is paid once per shim, not per container, and the children
// share the loaded pages.
//
// The children are the shim's own (CLONE_PARENT): its reaper sees their exits and
// libshim matches them by pid like any container process; the server keeps nothing of
// them. Each child is held at its gate until the shim releases it (Instance::start).
//
//   shim side:    ForkServer::start() once (from the Runtime), spawn() per process.
//   server side:  a program whose main() loads what it needs, then returns
//                 serve_forks(kForkServerFd, hooks) (an entry, and what runs
//                 before each fork and when idle).
//
// Threading: ForkServer's spawn() blocks (a pool thread, as every Instance call is);
// calls may overlap. serve_forks() runs in the server's only thread: the server must not
// start threads before or inside it (a fork copies only the calling thread).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim {

// The fd on which a fork server's program finds its control socket.
inline constexpr int kForkServerFd = 3;

// What a fork server's entry function gets in the child.
struct ForkedChild {
  std::vector<std::string> argv;  // the request's argv
  std::vector<std::string> env;   // the request's env (empty when it had none)
  std::string payload;            // what the shim passed to spawn()
};

// The shim's handle on one fork server process.
class ForkServer {
 public:
  // Starts `server`, whose program serves on kForkServerFd (mapped by this call), through
  // `spawner`, its exit claimed on `reaper` (it is no container's process).
  static Status start(Reaper& reaper, Spawner& spawner, SpawnRequest server,
                      std::unique_ptr<ForkServer>* out);
  // Closes the control socket (the server's loop ends) and SIGKILLs the server; the
  // children it made live on.
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // A held child made as `request` asks, by the server's spawner, with hold,
  // clone_parent and run_in_child (the entry, given `payload`) added. The parent fds of
  // request.fds, request.join_pidfd and request.join_namespace_files are sent with the
  // request; the caller keeps its own. child->gate releases it. Errors: the server's
  // spawn error as it is; Unavailable when the server is gone or did not answer within
  // `timeout` (start another); InvalidArgument for a request a server cannot carry
  // (parent_death_signal, run_in_child).
  Status spawn(const SpawnRequest& request, std::string_view payload, SpawnedProcess* child,
               std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // The server's pid.
  pid_t pid() const { return process_.pid; }
  // Whether it has exited (then every spawn() fails Unavailable).
  bool exited() const;

 private:
  ForkServer(ClaimedProcess process, UniqueFd control);

  ClaimedProcess process_;
  UniqueFd control_;
};

// What a fork server's program runs, and when (serve_forks).
struct ForkServerHooks {
  // Runs only in the children, where a spawned process would exec; what it returns is
  // the child's exit status.
  std::function<int(const ForkedChild&)> entry;
  // Runs in the server before each fork, given what the child will get. What it
  // prepares (a program loaded and made ready) the child inherits, and the pages it
  // wrote stay shared with every child forked later. What it throws is logged on stderr
  // and the fork goes on, so `entry` must not rely on it. It must not start threads: a
  // request after which the server has more than one fails Unavailable and the loop
  // ends (1).
  std::function<void(const ForkedChild&)> before_fork;
  // Runs once in the server, the first time no request came for `idle_after` (at start
  // or between requests): slow housekeeping there holds up no container's start. A
  // request that arrives meanwhile waits for it; it must not read the control socket.
  std::function<void()> when_idle;
  std::chrono::milliseconds idle_after{100};
};

// The fork server's loop: reads requests from `control_fd` until the shim closes it,
// spawning each child with `hooks.entry` as its run_in_child. Returns 0 at EOF; 1 when
// it cannot serve (more than one thread, also after a before_fork; a broken control
// socket), after saying why on
// stderr. It ignores SIGPIPE from then on (a closed stderr must not end it); each child
// starts with every signal's default action.
int serve_forks(int control_fd, ForkServerHooks hooks);

// The same, with only an entry and an idle hook.
int serve_forks(int control_fd, std::function<int(const ForkedChild&)> entry,
                std::function<void()> when_idle = {},
                std::chrono::milliseconds idle_after = std::chrono::milliseconds(100));

}  // namespace shim
