// StopContainer's grace period (SIGTERM, then SIGKILL when it runs out), RemoveContainer,
// and a containerd restart with pods running, with our shim and with the Go shim.
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

long seconds_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count() / 1000;
}

// The container's init pid from ContainerStatus(verbose)'s "info" JSON.
long container_pid(CriClient& client, const std::string& id) {
  v1::ContainerStatusResponse reply = client.container_status(id, true);
  auto it = reply.info().find("info");
  if (it == reply.info().end()) return -1;
  boost::system::error_code ec;
  boost::json::value info = boost::json::parse(it->second, ec);
  if (ec || !info.is_object() || !info.as_object().contains("pid")) return -1;
  return info.as_object().at("pid").to_number<long>();
}

void observe_stop(CriEnv& env, Side side, const Pod& pod, Observed& seen) {
  CriClient& client = env.client(side);
  v1::ContainerConfig trap = container_config("trap", {"/bin/helper", "term-exit", "0"});
  v1::ContainerConfig stubborn = container_config("stubborn", {"/bin/helper", "ignore-term"});
  const std::string trap_id = run_container(client, pod, trap);
  const std::string stubborn_id = run_container(client, pod, stubborn);
  wait_log_contains(log_path(pod, trap), "ready");
  wait_log_contains(log_path(pod, stubborn), "ready");

  auto start = Clock::now();
  client.stop_container(trap_id, 10);
  seen["trap stop took (s)"] = std::to_string(seconds_since(start));
  v1::ContainerStatus status = client.container_status(trap_id).status();
  seen["trap state"] = v1::ContainerState_Name(status.state());
  seen["trap exit code"] = std::to_string(status.exit_code());
  seen["trap reason"] = status.reason();
  seen["trap saw SIGTERM"] =
      std::to_string(cri_log_payload(parse_cri_log(read_file(log_path(pod, trap))), "stdout") ==
                     "ready\ngot SIGTERM\n");

  start = Clock::now();
  client.stop_container(stubborn_id, 2);
  seen["stubborn stop took (s)"] = std::to_string(seconds_since(start));
  status = client.container_status(stubborn_id).status();
  seen["stubborn state"] = v1::ContainerState_Name(status.state());
  seen["stubborn exit code"] = std::to_string(status.exit_code());
  seen["stubborn reason"] = status.reason();
  // Stopping again is a no-op (kubelet does it).
  client.stop_container(stubborn_id, 2);

  for (const auto& id : {trap_id, stubborn_id}) client.remove_container(id);
  client.remove_container(trap_id);  // idempotent
  std::string after = "found";
  try {
    client.container_status(trap_id);
  } catch (const CriError& e) {
    after = std::to_string(static_cast<int>(e.code()));
  }
  seen["status after remove"] = after;
  seen["bundle after remove"] = std::to_string(fs::exists(env.daemon(side).bundle_dir(trap_id)));
  // RemoveContainer stops a running container first.
  const std::string running_id =
      run_container(client, pod, container_config("running", {"sleep", "3600"}));
  client.remove_container(running_id);
  seen["running container removed"] = std::to_string(client.list_containers(pod.id).empty());
}

void observe_restart(CriEnv& env, Side side, const Pod& pod, Observed& seen) {
  CriDaemon& daemon = env.daemon(side);
  CriClient& client = daemon.client();
  std::vector<std::string> ids;
  std::vector<long> pids;
  for (const char* name : {"one", "two"}) {
    ids.push_back(run_container(client, pod, container_config(name, {"sleep", "3600"})));
    pids.push_back(container_pid(client, ids.back()));
  }
  std::vector<ShimProcess> before = shim_processes(daemon.fx().grpc_address());
  daemon.restart();
  std::vector<ShimProcess> after = shim_processes(daemon.fx().grpc_address());
  seen["shim survived the restart"] =
      std::to_string(before.size() == 1 && after.size() == 1 && before[0].pid == after[0].pid);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    v1::ContainerStatus status = client.container_status(ids[i]).status();
    seen[fmt::format("container {} state after restart", i)] =
        v1::ContainerState_Name(status.state());
    seen[fmt::format("container {} same pid", i)] =
        std::to_string(pids[i] > 0 && container_pid(client, ids[i]) == pids[i]);
    v1::ExecSyncResponse exec =
        client.exec_sync(ids[i], {"/bin/sh", "-c", "echo alive-$0", "x"}, 10);
    seen[fmt::format("container {} exec after restart", i)] = exec.stdout();
  }
  v1::PodSandboxStatusResponse pod_status = client.pod_status(pod.id);
  seen["pod state after restart"] = v1::PodSandboxState_Name(pod_status.status().state());
  // The restarted daemon still gets the exits: stop one container and see it exited.
  client.stop_container(ids[0], 0);
  seen["exit seen after restart"] =
      v1::ContainerState_Name(client.container_status(ids[0]).status().state());
  const pid_t shim_pid = after.empty() ? 0 : after[0].pid;
  // The restarted daemon waits on the pod again (a shim-mode pod: WaitSandbox re-issued),
  // so the stop is seen.
  client.stop_pod(pod.id);
  // CRI marks the pod NOTREADY when its wait returns, on a goroutine of its own.
  v1::PodSandboxState stopped = v1::SANDBOX_READY;
  for (int i = 0; i < 100 && stopped == v1::SANDBOX_READY; ++i) {
    if (i > 0) std::this_thread::sleep_for(50ms);
    stopped = client.pod_status(pod.id).status().state();
  }
  seen["pod state after stop"] = v1::PodSandboxState_Name(stopped);
  client.remove_pod(pod.id);
  for (int i = 0; i < 200 && process_alive(shim_pid); ++i) std::this_thread::sleep_for(50ms);
  seen["shim gone after removal"] = std::to_string(shim_pid > 0 && !process_alive(shim_pid));
}

}  // namespace

TEST_CASE("CRI StopContainer grace period, RemoveContainer", "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  std::map<Side, Observed> seen;
  for (Side side : env.sides()) {
    Pod pod = run_pod(env, side, "stop");
    observe_stop(env, side, pod, seen[side]);
    remove_pod(env.client(side), pod);
  }
  check_same_as_go(seen);
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["trap state"] == "CONTAINER_EXITED");
    CHECK(s["trap exit code"] == "0");
    CHECK(s["trap reason"] == "Completed");
    CHECK(s["trap saw SIGTERM"] == "1");
    CRI_CHECK_TIMING(side, std::stol(s["trap stop took (s)"]) < 5);
    CHECK(s["stubborn state"] == "CONTAINER_EXITED");
    CHECK(s["stubborn exit code"] == "137");
    CHECK(s["stubborn reason"] == "Error");
    CRI_CHECK_TIMING(side, std::stol(s["stubborn stop took (s)"]) >= 2);
    CRI_CHECK_TIMING(side, std::stol(s["stubborn stop took (s)"]) < 8);
    CHECK(s["status after remove"] ==
          std::to_string(static_cast<int>(grpc::StatusCode::NOT_FOUND)));
    CHECK(s["bundle after remove"] == "0");
    CHECK(s["running container removed"] == "1");
  }
}

TEST_CASE("CRI containerd restart with pods running: they keep running, ExecSync works",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  std::map<Side, Observed> seen;
  for (Side side : env.sides()) {
    Pod pod = run_pod(env, side, "restart");
    observe_restart(env, side, pod, seen[side]);
  }
  check_same_as_go(seen);
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    Observed& s = seen[side];
    CHECK(s["shim survived the restart"] == "1");
    CHECK(s["container 0 state after restart"] == "CONTAINER_RUNNING");
    CHECK(s["container 1 state after restart"] == "CONTAINER_RUNNING");
    CHECK(s["container 0 same pid"] == "1");
    CHECK(s["container 1 same pid"] == "1");
    CHECK(s["container 0 exec after restart"] == "alive-x\n");
    CHECK(s["container 1 exec after restart"] == "alive-x\n");
    CHECK(s["pod state after restart"] == "SANDBOX_READY");
    CHECK(s["exit seen after restart"] == "CONTAINER_EXITED");
    CHECK(s["pod state after stop"] == "SANDBOX_NOTREADY");
    CHECK(s["shim gone after removal"] == "1");
  }
}

}  // namespace shim::test::cri
