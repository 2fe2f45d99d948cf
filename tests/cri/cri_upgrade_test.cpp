// Live upgrade under CRI (docs/live-upgrade.md): a pod's grouped shim (its pause container
// and a container streaming numbered lines to its CRI log) swaps its program in place four
// times, between shim-runc and a build with another version string, as an operator runs
// `<new binary> -namespace k8s.io -address ... -id <pod id> upgrade`. After each swap an
// ExecSync answers and a short container runs to its exit code. The shim's pid never
// changes, the log holds every line once, in order, and the pod stops and is removed as
// usual, the shim then exiting. Run under the system containerd (1.6) in CI; by hand under
// 1.7 and 2.1 with LIBSHIM_CONTAINERD_BIN, LIBSHIM_CTR_BIN and LIBSHIM_CONTAINERD_EXPECT.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
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

namespace {

// The pid holder of a shim-mode pod that shares its pid namespace: the shim's child that
// is pid 1 of its own pid namespace (NSpid ends in 1). 0 if there is none.
pid_t holder_of(pid_t shim) {
  std::error_code error;
  for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", shim), error)) {
    std::istringstream children(read_file((task.path() / "children").string()));
    for (pid_t child = 0; children >> child;) {
      std::istringstream status(read_file(fmt::format("/proc/{}/status", child)));
      for (std::string line; std::getline(status, line);) {
        if (line.starts_with("NSpid:") && line.ends_with("\t1")) return child;
      }
    }
  }
  return 0;
}

std::string link_of(const std::string& path) {
  std::error_code error;
  return fs::read_symlink(path, error).string() + "\n";
}

// One shim-mode pod with a shared pid namespace and a container, swapped twice: same shim
// pid and holder; the pod READY; a container started after each swap joins its netns
// and the holder's pid namespace; every shim thread but the main one in the host's netns.
struct SwappedPod {
  Pod pod;
  std::string first;
  pid_t shim = 0;
  pid_t holder = 0;
};

SwappedPod run_and_swap(CriEnv& env, const std::string& prefix) {
  const Side side = Side::ours_shim_mode;
  CriClient& client = env.client(side);
  SwappedPod p;
  p.pod = run_pod(env, side, prefix, /*share_pid=*/true);
  p.first = run_container(client, p.pod, container_config("first", {"/bin/sleep", "600"}, true));
  auto ns_of = [&](const std::string& id, const char* kind) {
    return client.exec_sync(id, {"/bin/sh", "-c", fmt::format("readlink /proc/self/ns/{}", kind)})
        .stdout();
  };
  const std::string pod_net = ns_of(p.first, "net");
  const std::string host_net = link_of("/proc/self/ns/net");
  REQUIRE(pod_net != host_net);
  const std::vector<std::string> binaries = {next_shim(), our_shim_binary()};
  for (std::size_t swap = 0; swap < binaries.size(); ++swap) {
    CommandResult run =
        run_command({binaries[swap], "-namespace", "k8s.io", "-address",
                     env.daemon(side).fx().grpc_address(), "-id", p.pod.id, "upgrade"});
    INFO(prefix << " swap " << swap + 1 << ": " << run.describe());
    REQUIRE(run.ok());
    const pid_t pid = swapped_pid(run.out);
    if (p.shim == 0) {
      p.shim = pid;
      p.holder = holder_of(pid);
      REQUIRE(p.holder > 0);
    }
    CHECK(pid == p.shim);
    CHECK(holder_of(pid) == p.holder);
    CHECK(exe_of(pid) == fs::canonical(binaries[swap]).string());
    CHECK(client.pod_status(p.pod.id).status().state() == v1::SANDBOX_READY);
    const std::string later =
        run_container(client, p.pod,
                      container_config(fmt::format("later-{}", swap), {"/bin/sleep", "600"}, true));
    CHECK(ns_of(later, "net") == pod_net);
    CHECK(ns_of(later, "pid") == link_of(fmt::format("/proc/{}/ns/pid", p.holder)));
    CHECK(client.exec_sync(p.first, {"/bin/sh", "-c", "exit 4"}).exit_code() == 4);
    std::error_code error;
    for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", pid), error)) {
      const std::string tid = task.path().filename().string();
      const std::string net = link_of((task.path() / "ns" / "net").string());
      if (net == "\n") continue;  // a pool thread that just retired
      INFO("thread " << tid);
      if (tid == std::to_string(pid)) {
        CHECK(net == pod_net);
        continue;
      }
      // A pool thread starts in the main thread's namespaces and moves to the host's
      // first thing (WorkPool::set_thread_start): one caught in between moves at once.
      CHECK(wait_until(
          [&] {
            const std::string now = link_of((task.path() / "ns" / "net").string());
            return now == host_net || now == "\n";
          },
          2s));
    }
  }
  return p;
}

}  // namespace

// Shim mode (containerd 2.x, sandboxer = "shim"): the pod is the shim itself (its main
// thread holds the pod's namespaces; a shared pid namespace has a holder child). After
// two swaps each: StopPodSandbox kills the carried holder, and a holder killed from
// outside turns its pod NOTREADY (the new program watches its exit).
TEST_CASE("CRI live upgrade: a pod without a pause container is carried across swaps",
          "[cri][multi-version][upgrade]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  if (!env.has_shim_mode()) LIBSHIM_SKIP("sandboxer = \"shim\" needs containerd 2.x");
  CriClient& client = env.client(Side::ours_shim_mode);
  SwappedPod stopped = run_and_swap(env, "upgrade-stop");
  SwappedPod killed = run_and_swap(env, "upgrade-kill");

  REQUIRE(::kill(killed.holder, SIGKILL) == 0);
  CHECK(shim::test::wait_until(
      [&] { return client.pod_status(killed.pod.id).status().state() == v1::SANDBOX_NOTREADY; },
      10s));

  client.stop_pod(stopped.pod.id);
  CHECK(exited(stopped.holder));  // killed and reaped by the new program's stop
  for (SwappedPod* p : {&stopped, &killed}) {
    remove_pod(client, p->pod);
    CHECK(shim::test::wait_until([&] { return exited(p->shim); }, 20s));
  }
}

}  // namespace shim::test::cri
