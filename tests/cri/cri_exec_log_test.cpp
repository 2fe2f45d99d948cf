// ExecSync, the CRI container log file, ContainerStats and UpdateContainerResources,
// each run with our shim and with the Go shim and compared.
#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"

namespace shim::test::cri {
namespace {

using namespace std::chrono_literals;

std::string code_text(const grpc::Status& status) {
  return std::to_string(static_cast<int>(status.error_code()));
}

void observe_exec(CriClient& client, const std::string& id, Observed& seen) {
  v1::ExecSyncResponse both =
      client.exec_sync(id, {"/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  seen["exec stdout"] = both.stdout();
  seen["exec stderr"] = both.stderr();
  seen["exec exit code"] = std::to_string(both.exit_code());
  // 1 MiB through the exec's stdout FIFO in one call.
  v1::ExecSyncResponse big =
      client.exec_sync(id, {"/bin/sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x"});
  seen["exec 1 MiB stdout size"] = std::to_string(big.stdout().size());
  seen["exec 1 MiB stdout all x"] =
      std::to_string(big.stdout().find_first_not_of('x') == std::string::npos);

  v1::ExecSyncResponse reply;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status timed_out = client.exec_sync_status(id, {"/bin/helper", "spin", "30"}, 1, &reply);
  const auto took = std::chrono::steady_clock::now() - start;
  seen["exec timeout code"] = code_text(timed_out);
  seen["exec timeout message says timeout"] =
      std::to_string(timed_out.error_message().find("timeout") != std::string::npos);
  seen["exec timeout returned within 10 s (timing)"] = std::to_string(took < 10s);
  // The timed-out exec's process is killed: no "helper spin" left in the container.
  v1::ExecSyncResponse ps = client.exec_sync(id, {"/bin/ps", "-o", "args"});
  seen["timed-out exec process left (timing)"] =
      std::to_string(ps.stdout().find("helper spin") != std::string::npos);

  grpc::Status missing = client.exec_sync_status(id, {"/no/such/binary"}, 10, &reply);
  seen["exec of a missing binary code"] = code_text(missing);
  seen["exec of a missing binary says so"] = std::to_string(
      missing.error_message().find("no such file or directory") != std::string::npos);
}

// 16 MiB of text in lines of varied length, some far above CRI's 16 KiB line limit
// (they come out as P entries), ending with a newline.
std::string log_payload() {
  std::string data;
  data.reserve(16 << 20);
  std::uint32_t state = 12345;
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  while (data.size() < (16u << 20)) {
    const std::uint32_t r = next();
    std::size_t length = (r >> 16) % 8 == 0 ? 16384 + (r >> 8) % 50000 : (r >> 8) % 300;
    length = std::min<std::size_t>(length, (16u << 20) - data.size() - 1);
    for (std::size_t i = 0; i < length; ++i)
      data.push_back(static_cast<char>('a' + (next() >> 16) % 26));
    data.push_back('\n');
  }
  return data;
}

void observe_log(CriEnv& env, Side side, const Pod& pod, const std::string& blob,
                 const std::string& expected, Observed& seen) {
  CriClient& client = env.client(side);
  v1::ContainerConfig config = container_config("logger", {"/bin/cat", "/data/blob"});
  v1::Mount* mount = config.add_mounts();
  mount->set_container_path("/data/blob");
  mount->set_host_path(blob);
  mount->set_readonly(true);
  const std::string id = run_container(client, pod, config);
  v1::ContainerStatus status = wait_exited(client, id, 120s);
  seen["logger exit code"] = std::to_string(status.exit_code());
  seen["logger reason"] = status.reason();
  seen["log path in status"] = std::to_string(status.log_path() == log_path(pod, config));
  const std::vector<CriLogEntry> entries = parse_cri_log(read_file(log_path(pod, config)));
  const std::string got = cri_log_payload(entries, "stdout");
  seen["log stdout byte-exact"] = std::to_string(got == expected);
  seen["log stdout size"] = std::to_string(got.size());
  seen["log stderr size"] = std::to_string(cri_log_payload(entries, "stderr").size());
  std::size_t partial = 0, longest = 0;
  for (const auto& e : entries) {
    if (e.tag == 'P') ++partial;
    longest = std::max(longest, e.content.size());
  }
  seen["log entries"] = std::to_string(entries.size());
  seen["log partial entries"] = std::to_string(partial);
  seen["log longest entry"] = std::to_string(longest);
  if (got != expected) {
    std::size_t at = 0;
    while (at < got.size() && at < expected.size() && got[at] == expected[at]) ++at;
    WARN(fmt::format("{}: log differs from byte {} (got {} bytes, expected {})", side_name(side),
                     at, got.size(), expected.size()));
  }
}

void observe_stats(CriClient& client, const std::string& id, Observed& seen) {
  v1::ContainerStats stats = client.container_stats(id);
  seen["stats id"] = std::to_string(stats.attributes().id() == id);
  seen["stats name"] = stats.attributes().metadata().name();
  seen["stats cpu usage > 0"] = std::to_string(stats.cpu().usage_core_nano_seconds().value() > 0);
  seen["stats cpu timestamp > 0"] = std::to_string(stats.cpu().timestamp() > 0);
  seen["stats memory working set > 0"] =
      std::to_string(stats.memory().working_set_bytes().value() > 0);
  seen["stats memory has usage"] = std::to_string(stats.memory().has_usage_bytes());
  seen["stats has writable layer"] = std::to_string(stats.has_writable_layer());
}

void observe_update(CriDaemon& daemon, const std::string& id, Observed& seen) {
  v1::LinuxContainerResources update;
  update.set_memory_limit_in_bytes(96L << 20);
  update.set_memory_swap_limit_in_bytes(96L << 20);
  update.set_cpu_period(100000);
  update.set_cpu_quota(50000);
  update.set_cpu_shares(512);
  daemon.client().update_resources(id, update);
  const std::string cgroup = fmt::format("{}/{}", daemon.cgroup_parent(), id);
  seen["update memory.limit_in_bytes"] = cgroup_value("memory", cgroup, "memory.limit_in_bytes");
  seen["update cpu.cfs_quota_us"] = cgroup_value("cpu", cgroup, "cpu.cfs_quota_us");
  seen["update cpu.cfs_period_us"] = cgroup_value("cpu", cgroup, "cpu.cfs_period_us");
  seen["update cpu.shares"] = cgroup_value("cpu", cgroup, "cpu.shares");
  v1::ContainerStatus status = daemon.client().container_status(id).status();
  seen["update status resources"] = status.resources().linux().ShortDebugString();
  // A limit below what the container uses is refused or OOM-kills; a bad quota is an error.
  v1::LinuxContainerResources bad;
  bad.set_cpu_quota(500);  // below the kernel's 1 ms minimum
  bad.set_cpu_period(100000);
  std::string error = "none";
  try {
    daemon.client().update_resources(id, bad);
  } catch (const CriError& e) {
    error = std::to_string(static_cast<int>(e.code()));
  }
  seen["update with a bad quota: error code"] = error;
}

}  // namespace

TEST_CASE("CRI ExecSync: stdout, stderr, exit code, timeout, missing binary",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  std::map<Side, Observed> seen;
  for (Side side : env.sides()) {
    Pod pod = run_pod(env, side, "exec");
    const std::string id =
        run_container(env.client(side), pod, container_config("main", {"sleep", "3600"}));
    observe_exec(env.client(side), id, seen[side]);
    remove_pod(env.client(side), pod);
  }
  check_same_as_go(seen);
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["exec stdout"] == "out\n");
    CHECK(s["exec stderr"] == "err\n");
    CHECK(s["exec exit code"] == "7");
    CHECK(s["exec 1 MiB stdout size"] == "1048576");
    CHECK(s["exec 1 MiB stdout all x"] == "1");
    CHECK(s["exec timeout code"] != "0");
    CHECK(s["exec timeout message says timeout"] == "1");
    CRI_CHECK_TIMING(side, s["exec timeout returned within 10 s (timing)"] == "1");
    CRI_CHECK_TIMING(side, s["timed-out exec process left (timing)"] == "0");
    CHECK(s["exec of a missing binary code"] != "0");
    CHECK(s["exec of a missing binary says so"] == "1");
  }
}

TEST_CASE("CRI container log: 16 MiB of output byte-exact in CRI format", "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  const std::string expected = log_payload();
  const std::string blob = env.work_dir() + "/blob";
  std::ofstream(blob, std::ios::binary) << expected;
  std::map<Side, Observed> seen;
  for (Side side : env.sides()) {
    Pod pod = run_pod(env, side, "log");
    observe_log(env, side, pod, blob, expected, seen[side]);
    remove_pod(env.client(side), pod);
  }
  check_same_as_go(seen);
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["logger exit code"] == "0");
    CHECK(s["logger reason"] == "Completed");
    CHECK(s["log path in status"] == "1");
    CHECK(s["log stdout byte-exact"] == "1");
    CHECK(s["log stderr size"] == "0");
    CHECK(s["log partial entries"] != "0");
    CHECK(s["log longest entry"] == "16384");
  }
}

TEST_CASE("CRI ContainerStats and UpdateContainerResources", "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  std::map<Side, Observed> seen;
  for (Side side : env.sides()) {
    Pod pod = run_pod(env, side, "res");
    v1::ContainerConfig config =
        container_config("worker", {"/bin/sh", "-c", "helper spin 1; sleep 3600"});
    set_memory_limit(config, 64L << 20);
    const std::string id = run_container(env.client(side), pod, config);
    std::this_thread::sleep_for(1500ms);  // let the spin burn some CPU time
    observe_stats(env.client(side), id, seen[side]);
    observe_update(env.daemon(side), id, seen[side]);
    remove_pod(env.client(side), pod);
  }
  check_same_as_go(seen);
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["stats id"] == "1");
    CHECK(s["stats name"] == "worker");
    CHECK(s["stats cpu usage > 0"] == "1");
    CHECK(s["stats memory working set > 0"] == "1");
    CHECK(s["update memory.limit_in_bytes"] == std::to_string(96L << 20));
    CHECK(s["update cpu.cfs_quota_us"] == "50000");
    CHECK(s["update cpu.cfs_period_us"] == "100000");
    CHECK(s["update cpu.shares"] == "512");
    CHECK(s["update with a bad quota: error code"] != "none");
  }
}

}  // namespace shim::test::cri
