// Pods at scale through CRI: N pods of 2 containers each with our shim and with the Go
// shim, started alternately (pod i: ours then Go for even i, Go then ours for odd i) on
// the CRI test environment (tests/cri/cri_env.h: private containerd with the CRI
// plugin, local images, private CNI bridge). Prints one JSON object with the raw samples:
//   start_ms   RunPodSandbox + 2 x (CreateContainer + StartContainer), per pod
//   stop_ms    StopPodSandbox + RemovePodSandbox, per pod
//   shims      shim processes while all pods run, with PSS/RSS/threads each
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
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>

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

// The shims of `side`: on a shared daemon both sides' shims name the same address, so
// they are told apart by their executable.
std::vector<ShimProcess> side_shims(CriEnv& env, Side side) {
  const std::string want = side == Side::ours
                               ? our_shim_binary()
                               : go_shim_binary(env.daemon(side).fx().containerd_bin());
  std::vector<ShimProcess> mine;
  for (auto& shim : shim_processes(env.daemon(side).fx().grpc_address())) {
    std::error_code ec;
    if (fs::weakly_canonical(shim.exe, ec) == fs::weakly_canonical(want, ec)) mine.push_back(shim);
  }
  return mine;
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
  std::map<Side, json::object> result;
  std::map<Side, json::array> start_ms, stop_ms;
  std::map<Side, std::vector<Pod>> pods;
  for (int i = 0; i < options.pods; ++i) {
    const std::array<Side, 2> order =
        i % 2 == 0 ? std::array{Side::ours, Side::go} : std::array{Side::go, Side::ours};
    for (Side side : order) pods[side].push_back(start_pod(env, side, start_ms[side]));
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // start-up garbage settles
  std::map<Side, double> idle_before;
  for (Side side : kBothSides) {
    const std::vector<ShimProcess> shims = side_shims(env, side);
    result[side]["shims"] = memory_of(shims);
    result[side]["cpu_ms"] = cpu_ms(shims);
    idle_before[side] = cpu_ms(shims);
  }
  std::this_thread::sleep_for(std::chrono::seconds(options.idle_seconds));
  for (Side side : kBothSides) {
    result[side]["idle_cpu_ms"] = cpu_ms(side_shims(env, side)) - idle_before[side];
  }
  // Teardown one side after the other, so each side's log lines are its own.
  for (Side side : kBothSides) {
    const std::size_t before = env.daemon(side).log_lines_with("failed to kill init's children").size();
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
  return {{"pods", options.pods},
          {"containers_per_pod", 2},
          {"idle_seconds", options.idle_seconds},
          {"containerd", env.version().text},
          {"daemons", env.shared_daemon() ? 1 : 2},
          {"ours", result[Side::ours]},
          {"go", result[Side::go]}};
}

}  // namespace
}  // namespace shim::test::cri

int main(int argc, char** argv) {
  shim::test::cri::Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--pods") options.pods = std::atoi(argv[i + 1]);
    else if (flag == "--idle-seconds") options.idle_seconds = std::atoi(argv[i + 1]);
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
