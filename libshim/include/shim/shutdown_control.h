// ShutdownControl: how a service ends the shim, and the one rule that decides whether the
// task API's Shutdown may end it.
//
// containerd sends Shutdown after every task it deletes (core/runtime/v2/shim.go,
// shimTask.delete; from containerd 2.4 on also for the tasks of a sandbox, #13958), so a
// shim that serves several containers (a pod's group, a sandbox) gets one Shutdown per
// container and must exit only once nothing is left. What "nothing is left" means is
// the keepers': each service that holds something alive registers one (the process
// tier's task service: its containers and the Creates under way; a sandbox service: a
// live sandbox), and shutdown_if_unused() ends the shim only when none of them answers
// a reason to stay. A protocol-tier TaskService calls shutdown_if_unused() from its
// Shutdown handler after registering a keeper for its own containers.
//
// Threading: request_shutdown() may be called from any thread, more than once.
// set_keeper(), remove_keeper() and shutdown_if_unused() run on the event loop (the
// keepers read loop state), as do the keepers themselves.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shim {

class ShutdownControl {
 public:
  // Why the shim must stay ("2 containers, 1 create under way"), or "" if it need not.
  using Keeper = std::function<std::string()>;

  virtual ~ShutdownControl() = default;

  // Ends the shim whatever keeps it (SIGTERM does the same): stop accepting, finish
  // in-flight replies, flush events, remove the socket, exit 0. Returns at once.
  virtual void request_shutdown() = 0;

  // The task API's Shutdown rule: asks every keeper in the order they were set; if one
  // answers a reason, the shim stays and that reason ("<name>: <reason>") is returned;
  // otherwise when_unused() is called (request_shutdown(), unless the shim lingers) and
  // "" returned. A keeper that throws keeps the shim (the reason names the exception):
  // ending a shim that may still serve a container is the one mistake this must not make.
  std::string shutdown_if_unused();

  // The first keeper's reason to stay ("<name>: <reason>"), or "" if none keeps the shim;
  // asks as shutdown_if_unused() does, but ends nothing.
  std::string why_kept();

  // Registers `keeper` under `name` ("tasks", "sandbox"), replacing a keeper of that
  // name. The keeper must stay callable until it is removed.
  void set_keeper(std::string name, Keeper keeper);
  // Removes the keeper named `name`, if any (e.g. from the destructor of its service).
  void remove_keeper(std::string_view name);

 protected:
  // What shutdown_if_unused() does when no keeper keeps the shim: request_shutdown() (the
  // default), or, for a shim that lingers (DaemonOptions::shared_linger), arm its timer.
  virtual void when_unused() { request_shutdown(); }

 private:
  std::vector<std::pair<std::string, Keeper>> keepers_;
};

}  // namespace shim
