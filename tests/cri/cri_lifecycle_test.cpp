// Pod life cycle through CRI with our shim and with the Go shim in the same run: one shim
// process serves the sandbox and all of the pod's containers, exit codes and reasons,
// and StopPodSandbox + RemovePodSandbox leave nothing behind.
#include <filesystem>
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

struct ExitCase {
  const char* name;
  std::vector<std::string> command;
  long memory_limit = 0;
};

const std::vector<ExitCase>& exit_cases() {
  static const std::vector<ExitCase> cases = {
      {"completed", {"/bin/sh", "-c", "echo done; exit 0"}},
      {"error", {"/bin/sh", "-c", "echo oops >&2; exit 3"}},
      // A real process (not a busybox applet) that allocates until the 24 MiB limit, a
      // moment after the start (an OOM before the shims watch for it is missed by both).
      {"oom", {"/bin/sh", "-c", "sleep 0.2; exec /bin/helper hog"}, 24L << 20},
  };
  return cases;
}

// Everything that must be gone once the pod is: recorded before the teardown.
struct PodFootprint {
  pid_t shim_pid = 0;
  std::string shim_socket;
  std::vector<std::string> ids;  // sandbox first
};

void observe_exits(CriClient& client, const Pod& pod, Observed& seen) {
  for (const ExitCase& c : exit_cases()) {
    v1::ContainerConfig config = container_config(c.name, c.command);
    if (c.memory_limit != 0) set_memory_limit(config, c.memory_limit);
    const std::string id = run_container(client, pod, config);
    v1::ContainerStatus status = wait_exited(client, id);
    seen[fmt::format("{}.exit_code", c.name)] = std::to_string(status.exit_code());
    seen[fmt::format("{}.reason", c.name)] = status.reason();
  }
}

PodFootprint observe_one_shim(CriEnv& env, Side side, const Pod& pod, Observed& seen) {
  CriDaemon& daemon = env.daemon(side);
  CriClient& client = daemon.client();
  PodFootprint footprint;
  footprint.ids.push_back(pod.id);
  for (const char* name : {"sleeper-1", "sleeper-2"}) {
    footprint.ids.push_back(run_container(client, pod, container_config(name, {"sleep", "3600"})));
  }
  std::vector<ShimProcess> shims = shim_processes(daemon.fx().grpc_address());
  seen["shim processes"] = std::to_string(shims.size());
  seen["shim is the sandbox's"] = std::to_string(shims.size() == 1 && shims[0].id == pod.id);
  footprint.shim_pid = shims.empty() ? 0 : shims[0].pid;
  const std::string address = daemon.shim_address(pod.id);
  seen["sandbox shim address is unix://"] = std::to_string(address.rfind("unix://", 0) == 0);
  footprint.shim_socket = address.size() > 7 ? address.substr(7) : "";
  for (std::size_t i = 1; i < footprint.ids.size(); ++i) {
    seen[fmt::format("container {} shim address is the sandbox's", i)] =
        std::to_string(daemon.shim_address(footprint.ids[i]) == address);
    v1::ContainerStatus status = client.container_status(footprint.ids[i]).status();
    seen[fmt::format("container {} state", i)] = v1::ContainerState_Name(status.state());
  }
  v1::PodSandboxStatusResponse pod_status = client.pod_status(pod.id);
  seen["pod state"] = v1::PodSandboxState_Name(pod_status.status().state());
  seen["pod has an IP"] = std::to_string(!pod_status.status().network().ip().empty());
  return footprint;
}

// Waits up to 10 s for the shim to exit (containerd reaps it after the last delete).
bool shim_gone(pid_t pid) {
  for (int i = 0; i < 200 && process_alive(pid); ++i) std::this_thread::sleep_for(50ms);
  return !process_alive(pid);
}

void observe_teardown(CriDaemon& daemon, const Pod& pod, const PodFootprint& footprint,
                      Observed& seen) {
  remove_pod(daemon.client(), pod);
  seen["shim process gone"] =
      std::to_string(footprint.shim_pid > 0 && shim_gone(footprint.shim_pid));
  seen["shim socket gone"] =
      std::to_string(!footprint.shim_socket.empty() && !fs::exists(footprint.shim_socket));
  const std::vector<std::string> mounts = mounts_under(daemon.fx().dir());
  seen["mounts left"] = fmt::format("{}", mounts.size());
  for (const auto& mount : mounts) WARN(fmt::format("mount left: {}", mount));
  int cgroups = 0;
  int bundles = 0;
  for (const auto& id : footprint.ids) {
    for (const auto& dir : cgroup_dirs(fmt::format("{}/{}", daemon.cgroup_parent(), id))) {
      WARN(fmt::format("cgroup left: {}", dir));
      ++cgroups;
    }
    if (fs::exists(daemon.bundle_dir(id))) ++bundles;
  }
  seen["cgroups left"] = std::to_string(cgroups);
  seen["bundles left"] = std::to_string(bundles);
  seen["runc state left"] =
      std::to_string(dir_entries(daemon.runc_root() + "/" + kCriNamespace).size());
  seen["pods listed"] = std::to_string(daemon.client().list_pods().size());
  seen["containers listed"] = std::to_string(daemon.client().list_containers().size());
}

}  // namespace

TEST_CASE("CRI pod life cycle: one shim per pod, exit reasons, nothing left after removal",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  std::map<Side, Observed> seen;
  for (Side side : env.sides()) {
    Pod pod = run_pod(env, side, "life");
    PodFootprint footprint = observe_one_shim(env, side, pod, seen[side]);
    observe_exits(env.client(side), pod, seen[side]);
    observe_teardown(env.daemon(side), pod, footprint, seen[side]);
  }
  check_same_as_go(seen);
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["shim processes"] == "1");
    CHECK(s["shim is the sandbox's"] == "1");
    CHECK(s["container 1 shim address is the sandbox's"] == "1");
    CHECK(s["container 2 shim address is the sandbox's"] == "1");
    CHECK(s["container 1 state"] == "CONTAINER_RUNNING");
    CHECK(s["pod state"] == "SANDBOX_READY");
    CHECK(s["pod has an IP"] == "1");
    CHECK(s["completed.exit_code"] == "0");
    CHECK(s["completed.reason"] == "Completed");
    CHECK(s["error.exit_code"] == "3");
    CHECK(s["error.reason"] == "Error");
    CHECK(s["oom.exit_code"] == "137");
    CHECK(s["oom.reason"] == "OOMKilled");
    CHECK(s["shim process gone"] == "1");
    CHECK(s["shim socket gone"] == "1");
    CHECK(s["mounts left"] == "0");
    CHECK(s["cgroups left"] == "0");
    CHECK(s["bundles left"] == "0");
    CHECK(s["runc state left"] == "0");
    CHECK(s["pods listed"] == "0");
    CHECK(s["containers listed"] == "0");
  }
}

}  // namespace shim::test::cri
