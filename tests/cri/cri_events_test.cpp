// What containerd learns from the shim's events, where timing matters: every OOM kill
// reported as OOMKilled (and published as /tasks/oom), and pod teardown without the
// shim's killall errors. Each repeated enough to see
// a race, with our shim and with the Go shim.
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"

namespace shim::test::cri {
namespace {

using namespace std::chrono_literals;

// Repetitions, from $LIBSHIM_CRI_ROUNDS when set (a longer hunt by hand).
int rounds(int fallback) {
  const char* value = std::getenv("LIBSHIM_CRI_ROUNDS");
  return value != nullptr && std::atoi(value) > 0 ? std::atoi(value) : fallback;
}

struct OomTally {
  int runs = 0;
  int oom_killed = 0;
  int exit_137 = 0;
  int with_event = 0;
};

struct OomPhase {
  const char* name;
  bool load;       // two CPU spinners in the pod meanwhile (2 cores here)
  bool immediate;  // the hog allocates from its first instruction
};

// `count` hog containers in one pod, one after the other, each under a 16 MiB limit.
OomTally oom_loop(CriEnv& env, Side side, int count, const OomPhase& phase) {
  const bool load = phase.load;
  CriDaemon& daemon = env.daemon(side);
  CriClient& client = daemon.client();
  auto events = daemon.fx().subscribe_events({"topic==\"/tasks/oom\""});
  Pod pod = run_pod(env, side, load ? "oomload" : "oom");
  if (load) {
    for (const char* name : {"spin-1", "spin-2"}) {
      run_container(client, pod, container_config(name, {"/bin/helper", "spin", "0"}));
    }
  }
  OomTally tally;
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    // Delayed by 0.2 s, the OOM comes after the shim registered its OOM watcher (right
    // after runc start): the races after it (eventfd wake-up against exit, cgroup
    // removal, watcher close). Immediate, it can come before (see the test case).
    v1::ContainerConfig config = container_config(
        fmt::format("hog-{}", i),
        phase.immediate
            ? std::vector<std::string>{"/bin/helper", "hog"}
            : std::vector<std::string>{"/bin/sh", "-c", "sleep 0.2; exec /bin/helper hog"});
    set_memory_limit(config, 16L << 20);
    const std::string id = run_container(client, pod, config);
    v1::ContainerStatus status = wait_exited(client, id);
    // CRI sets the reason from /tasks/oom whenever it arrives, also after the exit.
    try {
      status = wait_status(
          client, id, [](const v1::ContainerStatus& s) { return s.reason() == "OOMKilled"; },
          "OOMKilled", 3s);
    } catch (const std::runtime_error& e) {
      WARN(fmt::format("{}: hog {} not OOMKilled: {}", side_name(side), i, e.what()));
    }
    ++tally.runs;
    if (status.reason() == "OOMKilled") ++tally.oom_killed;
    if (status.exit_code() == 137) ++tally.exit_137;
    ids.push_back(id);
  }
  for (const auto& id : ids) {
    if (events->wait_for_line({"/tasks/oom", id}, 2s)) ++tally.with_event;
  }
  remove_pod(client, pod);
  return tally;
}

constexpr const char* kKillAllError = "failed to kill init's children";
constexpr const char* kTransitionError = "invalid state transition";

// Rounds of pods sharing one PID namespace (the shim kills an init's children when it
// exits) with a container that exits on its own and one that runs until the teardown.
void churn_pods(CriEnv& env, Side side, int round_count, int pods_per_round) {
  CriClient& client = env.client(side);
  for (int round = 0; round < round_count; ++round) {
    std::vector<Pod> pods;
    std::vector<std::string> quick;
    for (int p = 0; p < pods_per_round; ++p) {
      pods.push_back(run_pod(env, side, "churn", /*share_pid=*/true));
      run_container(client, pods.back(), container_config("long", {"sleep", "3600"}, true));
      for (int q = 0; q < 3; ++q) {
        quick.push_back(run_container(
            client, pods.back(),
            container_config(fmt::format("quick-{}", q), {"/bin/sh", "-c", "exit 0"}, true)));
      }
    }
    for (const auto& id : quick) wait_exited(client, id);
    for (const Pod& pod : pods) remove_pod(client, pod);
  }
}

}  // namespace

TEST_CASE("CRI OOM loop: every OOM kill is reported OOMKilled and published",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  const int count = rounds(8);
  const OomPhase phases[] = {{"delayed, idle", false, false},
                             {"delayed, CPU load", true, false},
                             {"immediate", false, true}};
  for (const OomPhase& phase : phases) {
    for (Side side : env.sides()) {
      INFO("side " << side_name(side) << ", " << phase.name);
      OomTally tally = oom_loop(env, side, count, phase);
      CHECK(tally.runs == count);
      CHECK(tally.exit_137 == count);
      // The Go shim (the reference) misses OOM kills that race its watcher: one that
      // comes before the watcher is registered after runc start (seen: 2 of 8 under 2.1),
      // and under CPU load one of a delayed hog too (seen: 7 of 8, reason "Error", under
      // 2.1 with one core busy). Its misses are recorded, never a failure; ours must miss
      // none.
      if (side == Side::go) {
        if (tally.oom_killed != count || tally.with_event != count) {
          WARN(fmt::format("go, {}: {} of {} OOMKilled, {} /tasks/oom events", phase.name,
                           tally.oom_killed, count, tally.with_event));
        }
        continue;
      }
      CHECK(tally.oom_killed == count);
      CHECK(tally.with_event == count);
    }
  }
}

TEST_CASE("CRI pod teardown: no killall errors from the shim in containerd's log",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    CriDaemon& daemon = env.daemon(side);
    const std::size_t killall_before = daemon.log_lines_with(kKillAllError).size();
    const std::size_t transition_before = daemon.log_lines_with(kTransitionError).size();
    // 3 rounds showed the old race in most runs; tests/unit/task/runtime_task_service_test.cpp
    // pins the ordering that fixed it. LIBSHIM_CRI_ROUNDS=8 for a longer hunt.
    churn_pods(env, side, rounds(3), 5);
    std::this_thread::sleep_for(500ms);  // the last shims' log lines
    const std::vector<std::string> killall = daemon.log_lines_with(kKillAllError);
    const std::vector<std::string> transition = daemon.log_lines_with(kTransitionError);
    for (std::size_t i = killall_before; i < killall.size() && i < killall_before + 3; ++i) {
      WARN(killall[i]);
    }
    // The Go shim's kill of an init's children races CRI's own kill (the race this test
    // was written for): its errors are recorded, ours must be none.
    if (side == Side::go) {
      if (killall.size() != killall_before || transition.size() != transition_before) {
        WARN(fmt::format("go: {} killall errors, {} invalid state transitions",
                         killall.size() - killall_before, transition.size() - transition_before));
      }
      continue;
    }
    CHECK(killall.size() - killall_before == 0);
    CHECK(transition.size() - transition_before == 0);
  }
}

}  // namespace shim::test::cri
