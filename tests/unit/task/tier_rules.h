// Helpers of the [tier] rule tests (task_rpc_*_test.cpp, task_event_order_test.cpp): the
// requests they send, a real process for the rules that signal through a pidfd, and a
// barrier that proves an exit nobody holds would have been published by now.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "unit/task/scripted_tier.h"

namespace tier_rules {

namespace task = containerd::task::v2;
namespace types = containerd::v1::types;
using shim::test::CallResult;
using shim::test::kPrivatePidSpec;
using shim::test::kSharedPidSpec;
using shim::test::Tier;
using namespace std::chrono_literals;

// A pid no process can have (above Linux's PID_MAX_LIMIT): for the rules that need a
// process that is gone (no pidfd, no cgroup), where a made-up pid such as 4002 may be a
// live process of the host now and then.
inline constexpr std::uint32_t kNoSuchPid = 4194400;

// What containerd gets: "OK" or "<Code>: <text>" ("Unknown: cannot start a running process").
inline std::string outcome(const CallResult& result) { return result.status.to_string(); }

inline task::CreateTaskRequest create_request(Tier& tier, const std::string& id,
                                              const std::string& spec = kPrivatePidSpec) {
  task::CreateTaskRequest request;
  request.set_id(id);
  request.set_bundle(tier.bundle(id, spec));
  return request;
}

inline task::ExecProcessRequest exec_request(
    const std::string& id, const std::string& exec_id,
    const std::string& spec = R"({"args":["true"],"cwd":"/"})") {
  task::ExecProcessRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  request.mutable_spec()->set_value(spec);
  return request;
}

inline task::StateResponse state_of(Tier& tier, const std::string& id,
                                    const std::string& exec_id = "") {
  task::StateRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  task::StateResponse response;
  REQUIRE(tier.call("State", request, &response).status.ok());
  return response;
}

inline CallResult state_call(Tier& tier, const std::string& id, const std::string& exec_id = "") {
  task::StateRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  return tier.call<task::StateResponse>("State", request);
}

inline task::WaitRequest wait_request(const std::string& id, const std::string& exec_id = "") {
  task::WaitRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  return request;
}

inline task::DeleteRequest delete_request(const std::string& id, const std::string& exec_id = "") {
  task::DeleteRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  return request;
}

// The init's (or exec's) pid the scripted runtime reports, before it is created.
inline void script_pid(Tier& tier, const std::string& key, std::uint32_t pid) {
  std::lock_guard lock(tier.script.mu);
  tier.script.pids[key] = pid;
}

// Creates and starts container `id` (init pid 4000 + the id's length unless scripted).
inline void run(Tier& tier, const std::string& id, const std::string& spec = kPrivatePidSpec) {
  REQUIRE(tier.create(id, spec).status.ok());
  REQUIRE(tier.start(id).status.ok());
}

// Adds and starts exec `exec_id` of `id` with pid `pid`.
inline void run_exec(Tier& tier, const std::string& id, const std::string& exec_id,
                     std::uint32_t pid) {
  script_pid(tier, exec_id, pid);
  REQUIRE(tier.exec(id, exec_id).status.ok());
  REQUIRE(tier.start(id, exec_id).status.ok());
}

// Injects pid's exit and returns once the service recorded it (State says stopped). Its
// TaskExit may still be on its way (or held): wait for it separately.
inline void exit_recorded(Tier& tier, int pid, int status, const std::string& id,
                          const std::string& exec_id = "") {
  tier.reaper.exit(pid, status);
  REQUIRE(shim::test::eventually([&] { return tier.state(id, exec_id) == types::STOPPED; }));
}

// Returns once an exit injected before this call, and not held, would have been published:
// a fresh container's exit goes through the same steps (reaped, output settled) after it
// on the same loop, and its TaskExit is waited for. Uses one pool thread for a moment.
inline void exit_barrier(Tier& tier) {
  static std::atomic<int> next{0};
  int n = next++ % 1000;
  // Not the pid of a real process a test scripted: pids wrap around.
  while (::kill(7000 + n, 0) == 0 || errno != ESRCH) n = next++ % 1000;
  const std::string id = fmt::format("barrier-{}", n);
  script_pid(tier, id, static_cast<std::uint32_t>(7000 + n));
  run(tier, id);
  tier.reaper.exit(7000 + n, 0);
  REQUIRE(shim::test::eventually([&] {
    auto trail = tier.trail(id);
    return !trail.empty() && trail.back() == "/tasks/exit " + id;
  }));
}

// Whether `future` has its answer now. Only meaningful after a sync point that any answer
// given earlier would have preceded (an exit_barrier, or a later call on the connection).
inline bool answered(std::future<CallResult>& future) {
  return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// A real process (a child of the test that sleeps until signalled), for the rules that
// signal through a pidfd: script its pid as an init's or an exec's.
class SleepingChild {
 public:
  SleepingChild() {
    int ready[2];
    REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls after fork. Catch2's handlers would report a
      // "fatal error" of this copy of the test and keep it alive: the default actions.
      struct sigaction action = {};
      action.sa_handler = SIG_DFL;
      for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &action, nullptr);
      sigset_t none;
      ::sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      char byte = 1;
      if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte = 0;
    // Signals sent from now on meet the default actions.
    bool started = pid_ > 0 && ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    REQUIRE(started);
  }
  ~SleepingChild() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  SleepingChild(const SleepingChild&) = delete;
  SleepingChild& operator=(const SleepingChild&) = delete;

  std::uint32_t pid() const { return static_cast<std::uint32_t>(pid_); }
  // The signal that ended it (waiting 5 s at most); 0 if it still runs.
  int ended_by() {
    int status = 0;
    bool done = shim::test::eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; });
    if (!done) return 0;
    reaped_ = true;
    return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace tier_rules
