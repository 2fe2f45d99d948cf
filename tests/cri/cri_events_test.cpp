// What containerd learns from the shim's events, where timing matters: every OOM kill
// reported as OOMKilled (and published as /tasks/oom), and pod teardown without the
// shim's killall errors. Each repeated enough to see
// a race, with our shim and with the Go shim.
#include <chrono>
#include <cstdlib>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

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

// `count` hog containers in one pod, one after the other, each under a 16 MiB limit;
// with `load`, two CPU spinners run in the pod meanwhile (2 cores here).
OomTally oom_loop(CriEnv& env, Side side, int count, bool load) {
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
    // The hog starts 0.2 s late: an OOM before the shim has registered its OOM watcher
    // (right after runc start) is missed by both shims alike; this loop is about the
    // races after it (eventfd wake-up against exit, cgroup removal, watcher close).
    v1::ContainerConfig config = container_config(
        fmt::format("hog-{}", i), {"/bin/sh", "-c", "sleep 0.2; exec /bin/helper hog"});
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
  for (bool load : {false, true}) {
    for (Side side : kBothSides) {
      INFO("side " << side_name(side) << (load ? ", with CPU load" : ", idle"));
      OomTally tally = oom_loop(env, side, count, load);
      CHECK(tally.runs == count);
      CHECK(tally.exit_137 == count);
      CHECK(tally.oom_killed == count);
      CHECK(tally.with_event == count);
    }
  }
}

TEST_CASE("CRI pod teardown: no killall errors from the shim in containerd's log",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  for (Side side : kBothSides) {
    INFO("side " << side_name(side));
    CriDaemon& daemon = env.daemon(side);
    const std::size_t killall_before = daemon.log_lines_with(kKillAllError).size();
    const std::size_t transition_before = daemon.log_lines_with(kTransitionError).size();
    churn_pods(env, side, rounds(8), 5);
    std::this_thread::sleep_for(500ms);  // the last shims' log lines
    const std::vector<std::string> killall = daemon.log_lines_with(kKillAllError);
    const std::vector<std::string> transition = daemon.log_lines_with(kTransitionError);
    for (std::size_t i = killall_before; i < killall.size() && i < killall_before + 3; ++i) {
      WARN(killall[i]);
    }
    CHECK(killall.size() - killall_before == 0);
    CHECK(transition.size() - transition_before == 0);
  }
}

}  // namespace shim::test::cri
