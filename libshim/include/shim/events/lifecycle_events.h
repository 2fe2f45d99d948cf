// LifecycleEvents: publishes a shim's task events in the order containerd requires, so
// every plug-in gets the ordering right for free (containerd runtime/v2/shim.go and the CRI plugin
// rely on it):
//
//   * a process's TaskStart / TaskExecStarted goes out before its TaskExit, even when the
//     process dies before the start call has returned (its exit is held meanwhile);
//   * the init TaskExit of a container goes out only after the TaskExit of every exec of
//     that container that was started (or is being started);
//   * anything a plug-in publishes from on_reaped (e.g. TaskOOM) precedes the TaskExit;
//   * a TaskOOM of a container whose init is being started follows its TaskStart.
//
// It also matches reaped pids to processes. Feed it every exit the reaper fans out.
// A container whose exits its runtime reports itself (a VM's guest processes, whose pids
// are not the host's) gets a pid domain of its own, so a host pid never matches them.
// Not thread-safe: call it on the shim's event loop only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "shim/events/publisher.h"
#include "shim/pb/containerd/events.pb.h"
#include "shim/process/exit.h"

namespace shim {

// One process of a container: its init (exec_id empty) or one of its execs.
struct ProcessRef {
  std::string container_id;  // the container (task) id
  std::string exec_id;       // empty for the container's init process
  // Whether this is the container's init process.
  bool is_init() const { return exec_id.empty(); }
  friend auto operator<=>(const ProcessRef&, const ProcessRef&) = default;
};

class LifecycleEvents {
 public:
  // What the plug-in does at two points of an exit's way to containerd.
  struct Hooks {
    // A tracked process was reaped: record its exit, kill the rest of the container if
    // needed, publish TaskOOM if the cgroup saw one. Runs before the TaskExit is queued.
    std::function<void(const ProcessRef&, const ProcessExit&)> on_reaped;
    // The process's TaskExit has been queued (or muted after a failed start): answer
    // Wait calls now, so Wait never returns before the event.
    std::function<void(const ProcessRef&, const ProcessExit&)> on_exit_published;
  };

  // Identifies one start in progress.
  using StartToken = std::uint64_t;

  // Publishes through `publisher`; `hooks` run on the loop.
  LifecycleEvents(Publisher& publisher, Hooks hooks);

  // Every exit the reaper reports (tracked or not).
  void handle_exit(const ProcessExit& exit) { handle_exit(kHostPids, exit); }
  // An exit in pid domain `domain`: kHostPids for the reaper's, another number for a
  // runtime that reports its processes' exits itself (use_pid_domain()).
  void handle_exit(std::uint32_t domain, const ProcessExit& exit);
  static constexpr std::uint32_t kHostPids = 0;
  // The pids of `container_id` are numbers of pid domain `domain`: call before created().
  void use_pid_domain(const std::string& container_id, std::uint32_t domain);

  // Holds exits of pids nobody tracks until release_hold(): open it before a call that
  // creates a process whose pid is learnt only when the call returns (`runc create`),
  // so an exit in between is not lost. created() and start_succeeded() claim them.
  StartToken hold_exits();
  void release_hold(StartToken token);

  // Init created with a known pid: publishes /tasks/create and tracks the pid. An exit
  // of a created but never started init is published as it comes (containerd accepts
  // create -> exit -> delete).
  void created(const containerd::events::TaskCreate& event);
  // Exec `exec_id` was added to `container_id`: publishes /tasks/exec-added.
  void exec_added(const std::string& container_id, const std::string& exec_id);

  // A start (init or exec) is about to run. From now until it finishes, exits of pids
  // nobody tracks are held, because the starting process's pid may not be known yet.
  StartToken begin_start(const ProcessRef& process);
  // The start succeeded: publishes /tasks/start or /tasks/exec-started, then the
  // process's exit if it already happened.
  void start_succeeded(StartToken token, std::uint32_t pid);
  // The start failed: no start event. An exec that failed to start never existed for
  // containerd; an init whose start failed is handled like a created init.
  void start_failed(StartToken token);

  // Publishes /tasks/delete (forget() drops the processes).
  void deleted(const containerd::events::TaskDelete& event);
  // Publish /tasks/paused, /tasks/resumed and /tasks/oom for `container_id`.
  void paused(const std::string& container_id);
  void resumed(const std::string& container_id);
  void oom(const std::string& container_id);
  // Publishes any other event under `topic`, in order with the rest.
  void publish(std::string_view topic, const google::protobuf::MessageLite& event);

  // The process is gone from the plug-in (exec deleted, container deleted).
  void forget(const ProcessRef& process);

  // Called from on_reaped: the exit being handled waits (its TaskExit, and an init's exit
  // held for the execs) until resume_exit(token). For work that must finish before
  // containerd learns of the exit, e.g. killing the rest of a container without its own
  // pid namespace, which the Go shim does before it publishes the init's TaskExit.
  using ExitToken = std::uint64_t;
  ExitToken defer_exit();
  void resume_exit(ExitToken token);

  // For tests and state dumps.
  std::size_t held_exit_count() const;

  // Live upgrade (shim/live_upgrade.h). Whether nothing is under way or held: no start,
  // no hold, no held or deferred exit, no held TaskOOM. Only then is the state below all
  // there is to carry.
  bool settled() const;
  // In the new program, per process the old one tracked: `pid` (0: none) is tracked
  // unless `exited`; a started exec that has not exited holds its init's TaskExit, as
  // it did before.
  void restore_process(const ProcessRef& process, std::uint32_t pid, bool started, bool exited);

 private:
  // A pid in its domain: the host's (kHostPids) or a runtime's own.
  struct PidKey {
    std::uint32_t domain = kHostPids;
    std::uint32_t pid = 0;
    friend auto operator<=>(const PidKey&, const PidKey&) = default;
  };
  struct Tracked {
    ProcessRef ref;
    std::optional<ProcessExit> exit;  // reaped during its start; handled after it
  };
  struct Start {
    ProcessRef ref;
  };
  struct Deferred {
    ProcessRef ref;
    ProcessExit exit;
  };
  struct ContainerState {
    std::set<std::string> live_execs;  // started or starting, not yet exited
    std::optional<ProcessExit> held_init_exit;
    std::uint32_t init_pid = 0;
    std::uint32_t domain = kHostPids;  // where its pids come from
    bool held_oom = false;             // seen during the init's start: published after TaskStart
  };

  PidKey key_of(const std::string& container_id, std::uint32_t pid) const;
  void track(const PidKey& key, const ProcessRef& ref);
  void reaped(const PidKey& key, Tracked& tracked, const ProcessExit& exit);
  void exit_ready(const ProcessRef& ref, const ProcessExit& exit);
  void publish_exit(const ProcessRef& ref, const ProcessExit& exit);
  void exec_finished(const std::string& container_id, const std::string& exec_id);
  void publish_held_oom(const std::string& container_id);
  void drop_unclaimed_if_idle();
  std::optional<ProcessExit> take_unclaimed(const PidKey& key);

  Publisher& publisher_;
  Hooks hooks_;
  std::map<PidKey, Tracked> by_pid_;
  std::map<std::string, ContainerState> containers_;
  std::map<StartToken, Start> starts_;
  std::set<StartToken> holds_;
  StartToken next_token_ = 1;
  std::map<PidKey, ProcessExit> unclaimed_;  // exits of unknown pids during starts
  std::map<ExitToken, Deferred> deferred_;
  std::optional<ExitToken> deferring_;  // set by defer_exit() inside on_reaped
};

}  // namespace shim
