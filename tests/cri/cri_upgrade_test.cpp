// Live upgrade under CRI (docs/live-upgrade.md): a pod's grouped shim (its pause container
// and a container streaming numbered lines to its CRI log) swaps its program in place four
// times, between shim-runc and a build with another version string, as an operator runs
// `<new binary> -namespace k8s.io -address ... -id <pod id> upgrade`. After each swap an
// ExecSync answers and a short container runs to its exit code. The shim's pid never
// changes, the log holds every line once, in order, and the pod stops and is removed as
// usual, the shim then exiting. Run under the system containerd (1.6) in CI; by hand under
// 1.7 and 2.1 with LIBSHIM_CONTAINERD_BIN, LIBSHIM_CTR_BIN and LIBSHIM_CONTAINERD_EXPECT.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_pod.h"
#include "support/subprocess.h"
#include "support/wait_until.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Numbered lines in bursts of 100 with 10 ms pauses until /out/stop appears, then
// "END <count>".
const std::string kWriter =
    "i=0; while [ ! -e /out/stop ]; do j=0; while [ $j -lt 100 ]; do echo line-$i; "
    "i=$((i+1)); j=$((j+1)); done; usleep 10000; done; echo END $i";

std::string next_shim() {
  return std::string(LIBSHIM_BINARY_DIR) + "/tests/containerd-shim-upgrade-next-v1";
}

std::string exe_of(pid_t pid) {
  std::error_code error;
  return fs::read_symlink(fmt::format("/proc/{}/exe", pid), error).string();
}

// Exited: gone, or a zombie its parent (containerd, a subreaper) has not reaped yet.
bool exited(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text{std::istreambuf_iterator<char>(stat), {}};
  const std::size_t paren = text.rfind(')');
  return paren == std::string::npos || text.substr(paren + 2, 1) == "Z";
}

// The pid in "shim pid <pid> now runs <binary> (<version>); swap <ms> ms".
pid_t swapped_pid(const std::string& out) {
  const std::string prefix = "shim pid ";
  if (!out.starts_with(prefix)) return -1;
  return static_cast<pid_t>(std::stol(out.substr(prefix.size())));
}

// The log's stdout must be line-0 ... line-(n-1), then "END n".
void check_streamed_log(const std::string& payload) {
  const std::size_t end = payload.rfind("END ");
  REQUIRE(end != std::string::npos);
  const long count = std::stol(payload.substr(end + 4));
  std::string expected;
  for (long i = 0; i < count; ++i) expected += fmt::format("line-{}\n", i);
  expected += fmt::format("END {}\n", count);
  if (payload != expected) {
    std::size_t at = 0;
    while (at < payload.size() && at < expected.size() && payload[at] == expected[at]) ++at;
    FAIL(fmt::format("log differs from {} lines + END at byte {} of {} ({} expected): \"{}\"",
                     count, at, payload.size(), expected.size(), payload.substr(at, 60)));
  }
  CHECK(count > 0);
}

}  // namespace

TEST_CASE("CRI live upgrade: a pod's grouped shim swaps its program under running containers",
          "[cri][upgrade]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  const Side side = Side::ours;
  CriDaemon& daemon = env.daemon(side);
  CriClient& client = env.client(side);
  const std::string out = env.work_dir() + "/upgrade-out";
  fs::create_directories(out);
  ::chmod(out.c_str(), 0777);

  Pod pod = run_pod(env, side, "upgrade");
  v1::ContainerConfig writer = container_config("writer", {"/bin/sh", "-c", kWriter});
  v1::Mount* mount = writer.add_mounts();
  mount->set_container_path("/out");
  mount->set_host_path(out);
  const std::string writer_id = run_container(client, pod, writer);
  wait_log_contains(log_path(pod, writer), "line-1000\n");

  pid_t shim_pid = -1;
  const std::vector<std::string> binaries = {next_shim(), our_shim_binary(), next_shim(),
                                             our_shim_binary()};
  for (std::size_t swap = 0; swap < binaries.size(); ++swap) {
    CommandResult run = run_command({binaries[swap], "-namespace", "k8s.io", "-address",
                                     daemon.fx().grpc_address(), "-id", pod.id, "upgrade"});
    INFO("swap " << swap + 1 << ": " << run.describe());
    REQUIRE(run.ok());
    const pid_t pid = swapped_pid(run.out);
    REQUIRE(pid > 0);
    if (shim_pid == -1) shim_pid = pid;
    CHECK(pid == shim_pid);
    CHECK(exe_of(pid) == fs::canonical(binaries[swap]).string());

    v1::ExecSyncResponse exec =
        client.exec_sync(writer_id, {"/bin/sh", "-c", fmt::format("echo exec-{}; exit 5", swap)});
    CHECK(exec.stdout() == fmt::format("exec-{}\n", swap));
    CHECK(exec.exit_code() == 5);

    v1::ContainerConfig shortlived =
        container_config(fmt::format("short-{}", swap),
                         {"/bin/sh", "-c", fmt::format("echo short-{}; exit 3", swap)});
    const std::string short_id = run_container(client, pod, shortlived);
    CHECK(wait_exited(client, short_id, 30s).exit_code() == 3);
    wait_log_contains(log_path(pod, shortlived), fmt::format("short-{}\n", swap), 10s);
    client.remove_container(short_id);
  }

  // Still streaming after the last swap: the copy crossed the swaps mid-stream.
  const std::size_t logged_at_last_swap = fs::file_size(log_path(pod, writer));
  std::ofstream(out + "/stop").put('\n');
  CHECK(wait_exited(client, writer_id, 60s).exit_code() == 0);
  wait_log_contains(log_path(pod, writer), "END ", 30s);
  CHECK(fs::file_size(log_path(pod, writer)) > logged_at_last_swap);
  check_streamed_log(cri_log_payload(parse_cri_log(read_file(log_path(pod, writer))), "stdout"));
  CHECK(client.container_status(writer_id).status().state() == v1::CONTAINER_EXITED);

  // The upgraded shim stops the pod and leaves as the first program would.
  remove_pod(client, pod);
  CHECK(shim::test::wait_until([&] { return exited(shim_pid); }, 20s));
}

// Shim mode (containerd 2.x, sandboxer = "shim"): the pod is the shim itself (its main
// thread holds the pod's namespaces; a shared pid namespace has a holder child). Two swaps
// later the pod is still READY, a container started after each swap joins the same
// namespaces, every thread of the shim but the main one is back in the host's netns, and
// StopPodSandbox kills the carried holder and sees its exit.
TEST_CASE("CRI live upgrade: a pod without a pause container is carried across swaps",
          "[cri][multi-version][upgrade]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  if (!env.has_shim_mode()) LIBSHIM_SKIP("sandboxer = \"shim\" needs containerd 2.x");
  const Side side = Side::ours_shim_mode;
  CriDaemon& daemon = env.daemon(side);
  CriClient& client = env.client(side);
  Pod pod = run_pod(env, side, "upgrade-sbx", /*share_pid=*/true);
  const std::string first =
      run_container(client, pod, container_config("first", {"/bin/sleep", "600"}, true));
  auto net_of = [&](const std::string& id) {
    return client.exec_sync(id, {"/bin/sh", "-c", "readlink /proc/self/ns/net"}).stdout();
  };
  const std::string pod_net = net_of(first);
  const std::string host_net = fs::read_symlink("/proc/self/ns/net").string() + "\n";
  REQUIRE(pod_net != host_net);

  pid_t shim_pid = -1;
  const std::vector<std::string> binaries = {next_shim(), our_shim_binary()};
  for (std::size_t swap = 0; swap < binaries.size(); ++swap) {
    CommandResult run = run_command({binaries[swap], "-namespace", "k8s.io", "-address",
                                     daemon.fx().grpc_address(), "-id", pod.id, "upgrade"});
    INFO("swap " << swap + 1 << ": " << run.describe());
    REQUIRE(run.ok());
    const pid_t pid = swapped_pid(run.out);
    if (shim_pid == -1) shim_pid = pid;
    CHECK(pid == shim_pid);
    CHECK(exe_of(pid) == fs::canonical(binaries[swap]).string());
    CHECK(client.pod_status(pod.id).status().state() == v1::SANDBOX_READY);

    const std::string later = run_container(
        client, pod, container_config(fmt::format("later-{}", swap), {"/bin/sleep", "600"}, true));
    CHECK(net_of(later) == pod_net);
    CHECK(client.exec_sync(first, {"/bin/sh", "-c", "exit 4"}).exit_code() == 4);
    for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", pid))) {
      const std::string tid = task.path().filename().string();
      const std::string net = fs::read_symlink(task.path() / "ns" / "net").string() + "\n";
      INFO("thread " << tid);
      CHECK(net == (tid == std::to_string(pid) ? pod_net : host_net));
    }
  }

  // StopPodSandbox kills the holder the first program started and waits for its exit.
  remove_pod(client, pod);
  CHECK(shim::test::wait_until([&] { return exited(shim_pid); }, 20s));
}

}  // namespace shim::test::cri
