// Pods without a pause container: our shim as the pod's sandboxer (a containerd 2.x
// handler with `sandboxer = "shim"`) against our shim under CRI's podsandbox controller on
// the same daemon. What the pod's containers see must be the same (hostname, /etc/hosts,
// resolv.conf from the pod's DNS config, /dev/shm, sysctls, shared namespaces, a shared pid
// namespace, stats); what the host pays must be one process less (no pause), and the
// teardown must leave no pod file, mount or process.
#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr Side kModes[] = {Side::ours, Side::ours_shim_mode};

std::string cmdline(pid_t pid) {
  std::string text = read_file(fmt::format("/proc/{}/cmdline", pid));
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return text;
}

std::string exec_out(CriClient& client, const std::string& id, const std::string& script) {
  v1::ExecSyncResponse response = client.exec_sync(id, {"/bin/sh", "-c", script}, 10);
  return response.stdout() + response.stderr();
}

v1::PodSandboxConfig dns_pod_config(const CriDaemon& daemon, const std::string& name,
                                    bool share_pid) {
  v1::PodSandboxConfig config = pod_config(daemon, name, share_pid);
  auto* dns = config.mutable_dns_config();
  dns->add_servers("10.96.0.10");
  dns->add_servers("10.96.0.11");
  dns->add_searches("libshim-test.svc.cluster.local");
  dns->add_searches("cluster.local");
  dns->add_options("ndots:5");
  auto& sysctls = *config.mutable_linux()->mutable_sysctls();
  sysctls["net.ipv4.ip_unprivileged_port_start"] = "123";  // the pod's netns
  sysctls["kernel.shmmni"] = "2048";                       // the pod's IPC namespace
  return config;
}

Pod run_dns_pod(CriEnv& env, Side side, const std::string& prefix, bool share_pid) {
  Pod pod;
  pod.config = dns_pod_config(env.daemon(side), unique_name(prefix, side), share_pid);
  fs::create_directories(pod.config.log_directory());
  pod.id = env.client(side).run_pod(pod.config, env.handler(side));
  return pod;
}

// What the pod's containers see of it.
void observe_pod_view(CriClient& client, const Pod& pod, const std::vector<std::string>& ids,
                      Observed& seen) {
  const std::string& a = ids[0];
  const std::string& b = ids[1];
  const std::string hostname = pod.config.hostname() + "\n";
  seen["hostname is the pod's"] = std::to_string(exec_out(client, a, "hostname") == hostname);
  seen["/etc/hostname is the pod's"] =
      std::to_string(exec_out(client, a, "cat /etc/hostname") == hostname);
  seen["/etc/hosts is the host's"] =
      std::to_string(exec_out(client, a, "cat /etc/hosts") == read_file("/etc/hosts"));
  seen["/etc/resolv.conf"] = exec_out(client, a, "cat /etc/resolv.conf");
  seen["/dev/shm"] =
      exec_out(client, a, "grep ' /dev/shm ' /proc/mounts | /bin/busybox cut -d' ' -f3,4");
  seen["port start sysctl"] =
      exec_out(client, a, "cat /proc/sys/net/ipv4/ip_unprivileged_port_start");
  seen["shmmni sysctl"] = exec_out(client, a, "cat /proc/sys/kernel/shmmni");
  for (const char* ns : {"net", "ipc", "uts"}) {
    const std::string script = fmt::format("readlink /proc/self/ns/{}", ns);
    seen[fmt::format("containers share {}", ns)] =
        std::to_string(exec_out(client, a, script) == exec_out(client, b, script));
  }
  const std::string pod_ip = client.pod_status(pod.id).status().network().ip();
  seen["eth0 has the pod's IP"] = std::to_string(
      !pod_ip.empty() &&
      exec_out(client, a, "/bin/busybox ip -4 -o addr show eth0").find(pod_ip + "/") !=
          std::string::npos);
  seen["pod state"] = v1::PodSandboxState_Name(client.pod_status(pod.id).status().state());
  seen["pod status info parses"] = std::to_string(!client.pod_status(pod.id, true).info().empty());
  std::vector<v1::PodSandboxStats> stats = client.pod_stats(pod.id);
  seen["pod stats listed"] = std::to_string(stats.size());
  if (!stats.empty()) {
    seen["pod stats have cpu"] =
        std::to_string(stats[0].linux().cpu().has_usage_core_nano_seconds());
    seen["pod stats have memory"] =
        std::to_string(stats[0].linux().memory().has_working_set_bytes());
    seen["pod stats containers"] = std::to_string(stats[0].linux().containers_size());
  }
}

struct HostCost {
  std::size_t processes = 0;  // the shim and everything below it
  std::size_t pause = 0;      // of which run /pause
};

HostCost host_cost(CriDaemon& daemon, const Pod& pod) {
  HostCost cost;
  for (const ShimProcess& shim : shim_processes(daemon.fx().grpc_address())) {
    if (shim.id != pod.id) continue;
    for (pid_t pid : process_tree(shim.pid)) {
      ++cost.processes;
      if (cmdline(pid).rfind("/pause", 0) == 0) ++cost.pause;
    }
  }
  return cost;
}

}  // namespace

TEST_CASE("CRI shim mode: no pause container, and the pod's containers see what podsandbox gives",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  if (!env.has_shim_mode()) LIBSHIM_SKIP("sandboxer = \"shim\" needs containerd 2.x");
  std::map<Side, Observed> seen;
  std::map<Side, HostCost> cost;
  for (Side side : kModes) {
    INFO("side " << side_name(side));
    CriDaemon& daemon = env.daemon(side);
    CriClient& client = daemon.client();
    Pod pod = run_dns_pod(env, side, "view", false);
    std::vector<std::string> ids;
    for (const char* name : {"a", "b"}) {
      ids.push_back(run_container(client, pod, container_config(name, {"sleep", "3600"})));
    }
    observe_pod_view(client, pod, ids, seen[side]);
    cost[side] = host_cost(daemon, pod);
    const std::vector<ShimProcess> shims = shim_processes(daemon.fx().grpc_address());
    const pid_t shim_pid = shims.size() == 1 ? shims[0].pid : 0;
    remove_pod(client, pod);
    for (int i = 0; i < 200 && process_alive(shim_pid); ++i) std::this_thread::sleep_for(50ms);
    seen[side]["shim gone after removal"] =
        std::to_string(shim_pid > 0 && !process_alive(shim_pid));
    seen[side]["pod files left"] = std::to_string(fs::exists(daemon.cri_sandbox_root(pod.id)) +
                                                  fs::exists(daemon.cri_sandbox_state(pod.id)));
    seen[side]["mounts left"] = std::to_string(mounts_under(daemon.fx().dir()).size());
    seen[side]["bundle left"] = std::to_string(fs::exists(daemon.bundle_dir(pod.id)));
  }
  check_same_observations(seen[Side::ours_shim_mode], seen[Side::ours]);
  for (Side side : kModes) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["hostname is the pod's"] == "1");
    CHECK(s["/etc/hostname is the pod's"] == "1");
    CHECK(s["/etc/hosts is the host's"] == "1");
    CHECK(s["/etc/resolv.conf"] ==
          "search libshim-test.svc.cluster.local cluster.local\n"
          "nameserver 10.96.0.10\nnameserver 10.96.0.11\noptions ndots:5\n");
    CHECK(s["/dev/shm"].rfind("tmpfs ", 0) == 0);
    CHECK(s["port start sysctl"] == "123\n");
    CHECK(s["shmmni sysctl"] == "2048\n");
    CHECK(s["containers share net"] == "1");
    CHECK(s["containers share ipc"] == "1");
    CHECK(s["containers share uts"] == "1");
    CHECK(s["eth0 has the pod's IP"] == "1");
    CHECK(s["pod state"] == "SANDBOX_READY");
    CHECK(s["pod stats listed"] == "1");
    CHECK(s["pod stats have cpu"] == "1");
    CHECK(s["pod stats have memory"] == "1");
    CHECK(s["pod stats containers"] == "2");
    CHECK(s["shim gone after removal"] == "1");
    CHECK(s["pod files left"] == "0");
    CHECK(s["mounts left"] == "0");
    CHECK(s["bundle left"] == "0");
  }
  // The host's cost: the shim, two containers, and the pause process only in podsandbox.
  CHECK(cost[Side::ours].pause == 1);
  CHECK(cost[Side::ours].processes == 4);
  CHECK(cost[Side::ours_shim_mode].pause == 0);
  CHECK(cost[Side::ours_shim_mode].processes == 3);
}

TEST_CASE("CRI shim mode: a pod that shares its pid namespace", "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  if (!env.has_shim_mode()) LIBSHIM_SKIP("sandboxer = \"shim\" needs containerd 2.x");
  std::map<Side, Observed> seen;
  for (Side side : kModes) {
    INFO("side " << side_name(side));
    CriClient& client = env.client(side);
    Pod pod = run_dns_pod(env, side, "pidns", true);
    const std::string a =
        run_container(client, pod, container_config("a", {"sleep", "3600"}, true));
    const std::string b =
        run_container(client, pod, container_config("b", {"sleep", "3601"}, true));
    Observed& s = seen[side];
    s["b sees a's process"] =
        std::to_string(exec_out(client, b, "ps").find("sleep 3600") != std::string::npos);
    s["a is not pid 1"] = std::to_string(exec_out(client, a, "cat /proc/1/cmdline").find("sleep") ==
                                         std::string::npos);
    s["pid namespaces shared"] = std::to_string(exec_out(client, a, "readlink /proc/self/ns/pid") ==
                                                exec_out(client, b, "readlink /proc/self/ns/pid"));
    // An orphan of a container goes to the pod's pid 1, which reaps it: no zombie left.
    exec_out(client, a, "sh -c 'sleep 0.2 &' ; true");
    std::this_thread::sleep_for(1s);
    s["zombies"] =
        exec_out(client, b, "grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l");
    client.stop_container(a, 0);
    s["b survives a's stop"] = v1::ContainerState_Name(client.container_status(b).status().state());
    remove_pod(client, pod);
    s["pods listed after removal"] = std::to_string(client.list_pods().size());
  }
  check_same_observations(seen[Side::ours_shim_mode], seen[Side::ours]);
  for (Side side : kModes) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["b sees a's process"] == "1");
    CHECK(s["a is not pid 1"] == "1");
    CHECK(s["pid namespaces shared"] == "1");
    CHECK(s["zombies"] == "0\n");
    CHECK(s["b survives a's stop"] == "CONTAINER_RUNNING");
    CHECK(s["pods listed after removal"] == "0");
  }
}

}  // namespace shim::test::cri
