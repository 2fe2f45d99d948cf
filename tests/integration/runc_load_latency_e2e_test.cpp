// Connect and Pids stay fast with many containers in one grouped shim under CPU load,
// before and after a containerd restart. containerd 2.x reloads its shims at start: for
// every task's bundle a fresh connection, Connect (task PID) and Pids, all within one
// 5 s load budget per shim (core/runtime/v2/shim_load.go; #13954 made the budget cover
// the whole load; 2.2+ run GOMAXPROCS loads at once), and containerd serves nothing
// before that is done. With 100 containers in one pod's shim that is 100 Connects and
// 100 Pids to one process: the reload emulated here (two workers, as GOMAXPROCS is 2 on
// this machine) must be answered within 1 s.
//
// The container count is $LIBSHIM_LOAD_CONTAINERS (default 100: about 10 s on this
// machine, so CI runs the full case). $LIBSHIM_LOAD_RUNC names a runtime binary to use
// instead of runc: benchmarks/load_latency.sh compares `runc ps` (which the shim runs
// for a runc under another name) with libshim's own cgroup read and records the
// figures. Under containerd 2.1 when cmake/fetch-containerd.sh cached it (its reload
// sends Connect and Pids for every bundle, as 2.4's does), else the default
// containerd. Prints "LIBSHIM-LOAD: ..." lines.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "support/busybox_rootfs.h"
#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace task = containerd::task::v2;

// $LIBSHIM_LOAD_RUNC, or "" (runc).
std::string runtime_binary() {
  const char* text = std::getenv("LIBSHIM_LOAD_RUNC");
  return text != nullptr ? text : "";
}

int container_count() {
  const char* text = std::getenv("LIBSHIM_LOAD_CONTAINERS");
  int n = text != nullptr ? std::atoi(text) : 0;
  return n > 0 ? n : 100;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// containerd 2.1 from cmake/fetch-containerd.sh's cache, if it is there.
ContainerdOptions containerd_options() {
  ContainerdOptions options;
  options.path_prepend = {our_runc_shim_dir()};
  options.containerd_bin = cached_containerd_bin("2.1");
  return options;
}

// p50, p99 and max of `samples` (ms), for the log line.
std::string summary(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[static_cast<std::size_t>(q * (samples.size() - 1))]; };
  return fmt::format("p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms", at(0.5), at(0.99),
                     samples.back());
}

// A figure: in Catch's log, and unwrapped on stdout for benchmarks/load_latency.sh.
void report(const std::string& line) {
  WARN(line);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Two busy loops beside the shim for the scope's life.
struct CpuLoad {
  CpuLoad() {
    for (int i = 0; i < 2; ++i) {
      loops.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{"/bin/sh", "-c", "while :; do :; done"}, SpawnOptions{}));
    }
  }
  std::vector<std::unique_ptr<ChildProcess>> loops;
};

// Runs `work(i)` for i in [0, n) on `workers` threads; returns the wall time in ms.
template <class Work>
double in_parallel(int n, int workers, Work work) {
  std::atomic<int> next{0};
  auto start = Clock::now();
  std::vector<std::future<void>> running;
  for (int w = 0; w < workers; ++w) {
    running.push_back(std::async(std::launch::async, [&] {
      for (int i = next++; i < n; i = next++) work(i);
    }));
  }
  for (auto& r : running) r.get();
  return ms_since(start);
}

struct Sweep {
  std::vector<double> connect_ms;
  std::vector<double> pids_ms;
  double wall_ms = 0;
  std::atomic<int> wrong{0};  // calls that failed or answered another container's pids
};

// For each container, as containerd's reload does: a fresh connection, Connect, then a
// fresh connection, Pids; the one pid listed must be the init's that Connect named.
void sweep(const std::string& address, const std::string& ns, const char* service,
           const std::vector<std::string>& ids, int workers, Sweep* out) {
  std::mutex mu;
  out->connect_ms.assign(ids.size(), 0);
  out->pids_ms.assign(ids.size(), 0);
  out->wall_ms = in_parallel(static_cast<int>(ids.size()), workers, [&](int i) {
    task::ConnectRequest connect;
    connect.set_id(ids[i]);
    auto start = Clock::now();
    auto c = call_task_api(address, ns, "Connect", connect.SerializeAsString(), 5s, service);
    double connect_ms = ms_since(start);
    task::PidsRequest pids;
    pids.set_id(ids[i]);
    start = Clock::now();
    auto p = call_task_api(address, ns, "Pids", pids.SerializeAsString(), 5s, service);
    double pids_ms = ms_since(start);
    task::ConnectResponse connected;
    task::PidsResponse listed;
    bool ok = c.status.ok() && p.status.ok() && connected.ParseFromString(c.payload) &&
              listed.ParseFromString(p.payload) && listed.processes_size() == 1 &&
              listed.processes(0).pid() == connected.task_pid() && connected.task_pid() > 0;
    if (!ok) ++out->wrong;
    std::lock_guard lock(mu);
    out->connect_ms[i] = connect_ms;
    out->pids_ms[i] = pids_ms;
  });
}

// `ctr run -d` of `ids` (busybox sleep) in one group: the first starts the group's shim,
// the rest join it, four at a time. Returns how long it took (ms).
double create_group(const PrivateContainerd& fx, const std::string& rootfs,
                    const std::vector<std::string>& ids) {
  std::vector<std::string> flags = {"-d", "--annotation", "io.containerd.runc.v2.group=load"};
  for (const auto& flag : fx.run_flags()) flags.push_back(flag);
  if (!runtime_binary().empty()) flags.insert(flags.end(), {"--runc-binary", runtime_binary()});
  auto run = [&](std::size_t i) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--rootfs", rootfs, ids[i], "/bin/sleep", "600"});
    return fx.ctr(args);
  };
  auto start = Clock::now();
  REQUIRE(run(0).ok());
  std::atomic<int> failed{0};
  in_parallel(static_cast<int>(ids.size()) - 1, 4,
              [&](int i) { failed += run(static_cast<std::size_t>(i) + 1).ok() ? 0 : 1; });
  REQUIRE(failed == 0);
  return ms_since(start);
}

void report_figures(const std::string& who, double create_ms, const Sweep& live, double restart_ms,
                    const Sweep& reload) {
  report(fmt::format("LIBSHIM-LOAD: {}: created in {:.0f} ms", who, create_ms));
  report(fmt::format("LIBSHIM-LOAD: {}: live, 2 busy loops: Connect {}; Pids {}", who,
                     summary(live.connect_ms), summary(live.pids_ms)));
  report(fmt::format("LIBSHIM-LOAD: {}: containerd restart (stop excluded) {:.0f} ms", who,
                     restart_ms));
  report(
      fmt::format("LIBSHIM-LOAD: {}: reload sweep, 2 workers, 2 busy loops: all {} Connect+Pids in "
                  "{:.0f} ms; Connect {}; Pids {}",
                  who, reload.connect_ms.size(), reload.wall_ms, summary(reload.connect_ms),
                  summary(reload.pids_ms)));
}

}  // namespace

TEST_CASE("Connect and Pids answer fast for many containers of one shim, also after a restart",
          "[runc][load-latency]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  const int n = container_count();
  PrivateContainerd fx(containerd_options());
  const std::string rootfs = fx.dir() + "/rootfs";
  make_busybox_rootfs(rootfs);
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(fmt::format("l{:03}", i));
  const double create_ms = create_group(fx, rootfs, ids);
  const std::string address = fx.shim_address(ids[0]);
  REQUIRE_FALSE(address.empty());
  for (const std::string& id : ids) REQUIRE(fx.shim_address(id) == address);
  const char* service = task_service_for(fx.version());
  auto first = connect_task(address, fx.ns(), ids[0]);
  REQUIRE(first);

  Sweep live, reload;
  double restart_ms = 0;
  {
    CpuLoad load;
    sweep(address, fx.ns(), service, ids, 1, &live);
    fx.stop();
    auto start = Clock::now();
    fx.start();  // containerd loads every bundle before it serves
    restart_ms = ms_since(start);
    sweep(address, fx.ns(), service, ids, 2, &reload);
  }
  auto again = connect_task(address, fx.ns(), ids[n - 1]);
  REQUIRE(again);
  CHECK(again->shim_pid() == first->shim_pid());  // one shim, and the same one

  report_figures(fmt::format("{} containers, containerd {}, {}", n, fx.version().text,
                             runtime_binary().empty() ? "runc" : runtime_binary()),
                 create_ms, live, restart_ms, reload);
  CHECK(live.wrong == 0);
  CHECK(reload.wrong == 0);
  CHECK(reload.wall_ms < 1000);
  for (const auto* samples :
       {&live.connect_ms, &live.pids_ms, &reload.connect_ms, &reload.pids_ms}) {
    CHECK(*std::max_element(samples->begin(), samples->end()) < 500);
  }

  // Tear down four at a time (the fixture would do it one by one).
  in_parallel(n, 4, [&](int i) {
    fx.ctr({"task", "rm", "-f", ids[i]});
    fx.ctr({"container", "rm", ids[i]});
  });
}

}  // namespace shim::test
