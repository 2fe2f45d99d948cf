// Pods at scale through CRI: N pods of 2 containers each with our shim and with the Go
// shim under CRI's podsandbox controller and, on containerd 2.x, our shim as the pods'
// sandboxer (no pause container), started alternately (each side first in turn) on
// the CRI test environment (tests/cri/cri_env.h: private containerd with the CRI
// plugin, local images, private CNI bridge). Prints one JSON object with the raw samples:
//   start_ms   RunPodSandbox + 2 x (CreateContainer + StartContainer), per pod
//   stop_ms    StopPodSandbox + RemovePodSandbox, per pod
//   shims      shim processes while all pods run, with PSS/RSS/threads each
//   pod_overhead  per pod: host processes and PSS beyond its containers (shim + pause,
//              or the shim alone for a shim-mode pod)
//   cpu_ms     CPU time of all shims since they started (start-up, 3 creates/starts)
//   idle_cpu_ms  CPU time of all shims over `idle_seconds` with every pod running
//   killall_errors  the shim's "failed to kill init's children" lines during teardown
// benchmarks/cri_pods.py builds, runs and reports it.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct Options {
  int pods = 30;
  int idle_seconds = 10;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

long status_field(pid_t pid, const std::string& field) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// The shims of `side`: the ones serving its pods (both of our handlers run one binary).
std::vector<ShimProcess> side_shims(CriEnv& env, Side side, const std::vector<Pod>& pods) {
  std::set<std::string> ids;
  for (const Pod& pod : pods) ids.insert(pod.id);
  std::vector<ShimProcess> mine;
  for (auto& shim : shim_processes(env.daemon(side).fx().grpc_address())) {
    if (ids.count(shim.id) != 0) mine.push_back(shim);
  }
  return mine;
}

// What each pod costs the host beyond its containers: the shim and what it runs that is
// not a container's (the pause process; a shim-mode pod's pid-namespace holder), counted
// and their PSS summed. A container's processes are the ones whose command is the
// benchmark's `sleep`.
json::object pod_overhead(const std::vector<ShimProcess>& shims) {
  json::array per_pod;
  long processes = 0;
  long pss = 0;
  for (const auto& shim : shims) {
    const std::vector<pid_t> tree = process_tree(shim.pid);
    long pod_processes = 0;
    long pod_pss = 0;
    for (pid_t pid : tree) {
      std::ifstream in(fmt::format("/proc/{}/cmdline", pid));
      std::string command;
      std::getline(in, command, '\0');
      if (command == "sleep") continue;  // a container's process
      ++pod_processes;
      pod_pss += pss_kib(pid);
    }
    per_pod.push_back({{"processes", pod_processes}, {"pss_kib", pod_pss}});
    processes += pod_processes;
    pss += pod_pss;
  }
  const double n = shims.empty() ? 1.0 : static_cast<double>(shims.size());
  return {{"pods", shims.size()},
          {"processes_per_pod", static_cast<double>(processes) / n},
          {"pss_kib_per_pod", static_cast<double>(pss) / n},
          {"per_pod", per_pod}};
}

double cpu_ms(const std::vector<ShimProcess>& shims) {
  long ticks = 0;
  for (const auto& shim : shims) ticks += cpu_ticks(shim.pid);
  return 1000.0 * static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

Pod start_pod(CriEnv& env, Side side, json::array& samples) {
  const auto start = Clock::now();
  Pod pod = run_pod(env, side, "bench");
  for (const char* name : {"app", "sidecar"}) {
    run_container(env.client(side), pod, container_config(name, {"sleep", "1000000"}));
  }
  samples.push_back(ms_since(start));
  return pod;
}

json::object memory_of(const std::vector<ShimProcess>& shims) {
  json::array processes;
  for (const auto& shim : shims) {
    processes.push_back({{"pid", shim.pid},
                         {"pss_kib", pss_kib(shim.pid)},
                         {"rss_kib", status_field(shim.pid, "VmRSS")},
                         {"threads", status_field(shim.pid, "Threads")}});
  }
  return {{"count", shims.size()}, {"processes", processes}};
}

json::object run(const Options& options) {
  CriEnv env;
  const std::vector<Side> sides = env.sides();
  std::map<Side, json::object> result;
  std::map<Side, json::array> start_ms, stop_ms;
  std::map<Side, std::vector<Pod>> pods;
  for (int i = 0; i < options.pods; ++i) {
    // Alternated: each side goes first, second, ... equally often.
    for (std::size_t k = 0; k < sides.size(); ++k) {
      const Side side = sides[(i + k) % sides.size()];
      pods[side].push_back(start_pod(env, side, start_ms[side]));
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // start-up garbage settles
  std::map<Side, double> idle_before;
  for (Side side : sides) {
    const std::vector<ShimProcess> shims = side_shims(env, side, pods[side]);
    result[side]["shims"] = memory_of(shims);
    result[side]["pod_overhead"] = pod_overhead(shims);
    result[side]["cpu_ms"] = cpu_ms(shims);
    idle_before[side] = cpu_ms(shims);
  }
  std::this_thread::sleep_for(std::chrono::seconds(options.idle_seconds));
  for (Side side : sides) {
    result[side]["idle_cpu_ms"] = cpu_ms(side_shims(env, side, pods[side])) - idle_before[side];
  }
  // Teardown one side after the other, so each side's log lines are its own.
  for (Side side : sides) {
    const std::size_t before =
        env.daemon(side).log_lines_with("failed to kill init's children").size();
    for (const Pod& pod : pods[side]) {
      const auto start = Clock::now();
      remove_pod(env.client(side), pod);
      stop_ms[side].push_back(ms_since(start));
    }
    result[side]["killall_errors"] =
        env.daemon(side).log_lines_with("failed to kill init's children").size() - before;
    result[side]["start_ms"] = start_ms[side];
    result[side]["stop_ms"] = stop_ms[side];
  }
  json::object out = {{"pods", options.pods},
                      {"containers_per_pod", 2},
                      {"idle_seconds", options.idle_seconds},
                      {"containerd", env.version().text},
                      {"daemons", env.shared_daemon() ? 1 : 2}};
  for (Side side : sides)
    out[side == Side::ours_shim_mode ? "ours_shim_mode" : side_name(side)] = result[side];
  return out;
}

}  // namespace
}  // namespace shim::test::cri

int main(int argc, char** argv) {
  shim::test::cri::Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--pods")
      options.pods = std::atoi(argv[i + 1]);
    else if (flag == "--idle-seconds")
      options.idle_seconds = std::atoi(argv[i + 1]);
    else {
      std::cerr << "usage: cri_pods_bench [--pods N] [--idle-seconds S]\n";
      return 64;
    }
  }
  try {
    if (auto missing = shim::test::cri::cri_unavailable()) {
      std::cerr << "cri_pods_bench: " << *missing << "\n";
      return 2;
    }
    std::cout << boost::json::serialize(shim::test::cri::run(options)) << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "cri_pods_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
