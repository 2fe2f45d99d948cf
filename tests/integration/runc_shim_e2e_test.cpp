// shim-runc under a real containerd and runc, started privately by each test. Our
// binary is put first on containerd's PATH, so the stock runtime name
// io.containerd.runc.v2 resolves to it: the drop-in case. Cases that compare with the Go
// shim run the same steps against a second private containerd using Debian's Go shim.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

using Setup = RuncE2e;
using Shim = ShimUnderTest;

std::vector<pid_t> our_shims(const std::string& ns) { return live_shims(our_runc_shim(), ns); }

bool wait_no_shims(const std::string& ns, std::chrono::milliseconds timeout) {
  return wait_no_live_shims(our_runc_shim(), ns, timeout);
}

// Mount points at or below `dir` in this mount namespace. Only the fixture's own: other
// tests (or another run on the machine) mount and unmount elsewhere meanwhile.
std::size_t mounts_under(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point;
    fields >> id >> parent >> device >> root >> mount_point;
    if (mount_point == dir || mount_point.rfind(dir + "/", 0) == 0) ++n;
  }
  return n;
}

std::size_t count_fds(pid_t pid) {
  std::size_t n = 0;
  if (DIR* dir = ::opendir(fmt::format("/proc/{}/fd", pid).c_str())) {
    while (::readdir(dir) != nullptr) ++n;
    ::closedir(dir);
  }
  return n;
}

std::string repeated(std::string_view unit, std::size_t size) {
  std::string out;
  out.reserve(size);
  while (out.size() < size) out.append(unit.substr(0, std::min(unit.size(), size - out.size())));
  return out;
}

TEST_CASE("ctr run --rm returns the container's exit code",
          "[runc-e2e][runtime-binary][multi-version][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  for (int code : {0, 1, 3}) {
    auto r = s.fx.ctr(s.run({"--rm"}, fmt::format("exit{}", code),
                            {"/bin/sh", "-c", fmt::format("echo out-{}; exit {}", code, code)}));
    CHECK(r.exit_code == code);
    CHECK(r.out == fmt::format("out-{}\n", code));
  }
  // 137: killed from outside with SIGKILL while `ctr run` waits for it.
  std::vector<std::string> argv = {s.fx.ctr_bin(), "--address", s.fx.grpc_address(), "-n",
                                   s.fx.ns()};
  for (const auto& a : s.run({"--rm"}, "killed", {"/bin/sleep", "600"})) argv.push_back(a);
  ChildProcess runner(argv, SpawnOptions{});
  REQUIRE(s.wait_status("killed", "RUNNING", 20s));
  REQUIRE(s.fx.ctr({"task", "kill", "-s", "KILL", "killed"}).ok());
  auto status = runner.wait_for(20s);
  REQUIRE(status.has_value());
  CHECK(*status == 137);
  CHECK(wait_no_shims(s.fx.ns(), 5s));
}

TEST_CASE("detached run then exec ps kill and delete",
          "[runc-e2e][runtime-binary][multi-version][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  auto events = s.fx.subscribe_events();
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "d1",
                            {"/bin/sh", "-c", "trap 'exit 0' TERM; /bin/sleep 600 & wait"}))
              .ok());
  auto shims = our_shims(s.fx.ns());
  REQUIRE(shims.size() == 1);  // it really is our binary serving the task

  auto exec = s.fx.ctr(
      {"task", "exec", "--exec-id", "e1", "d1", "/bin/sh", "-c", "echo from-exec; exit 5"});
  CHECK(exec.exit_code == 5);
  CHECK(exec.out == "from-exec\n");

  auto ps = s.fx.ctr_ok({"task", "ps", "d1"});
  CHECK(ps.out.find("PID") != std::string::npos);
  CHECK(std::count(ps.out.begin(), ps.out.end(), '\n') >= 2);  // header + the shell + sleep

  REQUIRE(s.fx.ctr_ok({"task", "kill", "d1"}).ok());  // SIGTERM: the trap exits 0
  REQUIRE(s.wait_status("d1", "STOPPED", 10s));
  REQUIRE(s.fx.ctr_ok({"task", "rm", "d1"}).ok());
  REQUIRE(s.fx.ctr_ok({"container", "rm", "d1"}).ok());
  CHECK(wait_no_shims(s.fx.ns(), 5s));
  CHECK(::access(go_shim_socket_path(s.fx.grpc_address(), s.fx.ns(), "d1").c_str(), F_OK) != 0);

  REQUIRE(events->wait_for_line({"/tasks/delete", "\"d1\""}, 5s));
  CHECK(event_topics_for(*events, "d1") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exec-added",
                                 "/tasks/exec-started", "/tasks/exit", "/tasks/exit",
                                 "/tasks/delete"});
}

TEST_CASE("64 MiB of stdout and of stderr arrive byte-exact",
          "[runc-e2e][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  constexpr std::size_t kSize = 64u << 20;
  const std::string line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n";
  const std::string expected = repeated(line, kSize);
  std::string pipeline = fmt::format("yes {} | head -c {}", line.substr(0, line.size() - 1), kSize);

  auto out = s.fx.ctr(s.run({"--rm"}, "big-out", {"/bin/sh", "-c", pipeline}), 120s);
  REQUIRE(out.exit_code == 0);
  CHECK(out.out.size() == kSize);
  CHECK(out.out == expected);

  auto err = s.fx.ctr(s.run({"--rm"}, "big-err", {"/bin/sh", "-c", pipeline + " >&2"}), 120s);
  REQUIRE(err.exit_code == 0);
  CHECK(err.err.size() == kSize);
  CHECK(err.err == expected);
}

// ctr 1.6 never sends CloseIO when its stdin ends (the Go shim then keeps the process's
// stdin open too), so the container reads a known length instead of waiting for EOF.
TEST_CASE("stdin round trip through the container",
          "[runc-e2e][runtime-binary][multi-version][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  std::string input;
  for (int i = 0; i < 20000; ++i) input += fmt::format("line {} of the stdin round trip\n", i);
  CommandOptions options;
  options.stdin_data = input;
  options.timeout = 60s;
  std::vector<std::string> argv = {s.fx.ctr_bin(), "--address", s.fx.grpc_address(), "-n",
                                   s.fx.ns()};
  for (const auto& a :
       s.run({"--rm"}, "stdin1", {"/bin/head", "-c", std::to_string(input.size())})) {
    argv.push_back(a);
  }
  auto r = run_command(argv, options);
  REQUIRE(r.exit_code == 0);
  auto differ = std::mismatch(r.out.begin(), r.out.end(), input.begin(), input.end());
  INFO("stderr: " << r.err << "\nfirst difference at byte " << (differ.first - r.out.begin()));
  CHECK(r.out.size() == input.size());
  CHECK((r.out == input));  // not printed: 640 KB each side
}

TEST_CASE("a 1-byte-then-exit process loses no output", "[runc-e2e][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  for (int i = 0; i < 10; ++i) {
    auto r = s.fx.ctr(s.run({"--rm"}, fmt::format("quick{}", i), {"/bin/echo", "-n", "x"}));
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == "x");
  }
}

TEST_CASE("a runc failure gives the Go shim's error text", "[runc-e2e][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  std::string texts[2];
  for (Shim shim : {Shim::kOurs, Shim::kGo}) {
    Setup s(shim);
    auto r = s.fx.ctr(s.run({"--rm"}, "bad", {"/no/such/binary"}));
    CHECK(r.exit_code != 0);
    texts[shim == Shim::kOurs ? 0 : 1] = r.err;
  }
  INFO("ours: " << texts[0] << "\ngo:   " << texts[1]);
  CHECK(texts[0].find("OCI runtime create failed: runc create failed:") != std::string::npos);
  CHECK(texts[0] == texts[1]);
}

TEST_CASE("50 containers started and removed leave nothing behind", "[runc-e2e][runtime-binary]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  // Warm-up, so lazily opened containerd fds are counted in the baseline.
  REQUIRE(s.fx.ctr(s.run({"--rm"}, "warm", {"/bin/true"})).exit_code == 0);
  std::size_t mounts_before = mounts_under(s.fx.dir());
  std::size_t fds_before = count_fds(s.fx.pid());
  for (int i = 0; i < 50; ++i) {
    auto r = s.fx.ctr(s.run({"--rm"}, fmt::format("loop{}", i), {"/bin/true"}));
    REQUIRE(r.exit_code == 0);
  }
  CHECK(wait_no_shims(s.fx.ns(), 5s));
  CHECK(mounts_under(s.fx.dir()) == mounts_before);
  CHECK(count_fds(s.fx.pid()) <= fds_before + 2);
  for (int i = 0; i < 50; ++i) {
    auto socket = go_shim_socket_path(s.fx.grpc_address(), s.fx.ns(), fmt::format("loop{}", i));
    CHECK(::access(socket.c_str(), F_OK) != 0);
  }
  // No zombie children left under containerd (shims reap theirs; containerd reaps `start`).
  auto zombies = run_command({"ps", "-o", "stat=", "--ppid", std::to_string(s.fx.pid())});
  CHECK(zombies.out.find('Z') == std::string::npos);
}

TEST_CASE("containerd killed with -9 and restarted reconnects to running tasks",
          "[runc-e2e][multi-version][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "r1",
                            {"/bin/sh", "-c", "trap 'exit 3' TERM; /bin/sleep 600 & wait"}))
              .ok());
  REQUIRE(s.wait_status("r1", "RUNNING", 10s));
  s.fx.kill9();
  s.fx.restart();
  auto events = s.fx.subscribe_events();
  CHECK(s.task_status("r1") == "RUNNING");
  auto exec = s.fx.ctr({"task", "exec", "--exec-id", "after", "r1", "/bin/echo", "still-here"});
  CHECK(exec.exit_code == 0);
  CHECK(exec.out == "still-here\n");
  REQUIRE(s.fx.ctr_ok({"task", "kill", "r1"}).ok());
  REQUIRE(s.wait_status("r1", "STOPPED", 10s));
  auto exit_line = events->wait_for_line({"/tasks/exit", "\"id\":\"r1\""}, 10s);
  REQUIRE(exit_line);
  CHECK(exit_line->find("\"exit_status\":3") != std::string::npos);
  REQUIRE(s.fx.ctr_ok({"task", "rm", "r1"}).ok());
  CHECK(wait_no_shims(s.fx.ns(), 5s));
}

TEST_CASE("a shim killed with -9 is cleaned up through the delete action",
          "[runc-e2e][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  auto events = s.fx.subscribe_events();
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "k1", {"/bin/sleep", "600"})).ok());
  auto shims = our_shims(s.fx.ns());
  REQUIRE(shims.size() == 1);
  ::kill(shims[0], SIGKILL);
  // containerd sees the connection drop, runs `<shim> delete` (runc delete --force) and
  // publishes the exit and delete itself from the DeleteResponse.
  auto exit_line = events->wait_for_line({"/tasks/exit", "\"k1\""}, 15s);
  REQUIRE(exit_line);
  CHECK(exit_line->find("\"exit_status\":137") != std::string::npos);
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"k1\""}, 15s));
  CHECK(s.task_status("k1").empty());
  // runc's state is gone too: the container can be removed and created again.
  REQUIRE(s.fx.ctr_ok({"container", "rm", "k1"}).ok());
  REQUIRE(s.fx.ctr(s.run({"--rm"}, "k1", {"/bin/true"})).exit_code == 0);
}

}  // namespace
}  // namespace shim::test

namespace shim::test {
namespace {

// The same steps through both shims: the events containerd sees and the exec's output
// and exit code must match the Go shim's.
TEST_CASE("events and exec results match the Go shim", "[runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  struct Observed {
    std::vector<std::string> topics;
    std::string exec_out;
    int exec_code = -1;
    std::string state_after_kill;
  };
  auto observe = [](Shim shim) {
    Setup s(shim);
    Observed o;
    auto events = s.fx.subscribe_events();
    s.fx.ctr_ok(
        s.run({"-d"}, "cmp", {"/bin/sh", "-c", "trap 'exit 4' TERM; /bin/sleep 600 & wait"}));
    auto exec = s.fx.ctr(
        {"task", "exec", "--exec-id", "x1", "cmp", "/bin/sh", "-c", "echo cmp-out; exit 9"});
    o.exec_out = exec.out;
    o.exec_code = exec.exit_code;
    s.fx.ctr_ok({"task", "kill", "cmp"});
    s.wait_status("cmp", "STOPPED", 10s);
    o.state_after_kill = s.task_status("cmp");
    s.fx.ctr_ok({"task", "rm", "cmp"});
    events->wait_for_line({"/tasks/delete", "\"cmp\""}, 5s);
    o.topics = event_topics_for(*events, "cmp");
    return o;
  };
  Observed ours = observe(Shim::kOurs);
  Observed go = observe(Shim::kGo);
  CHECK(ours.topics == go.topics);
  CHECK(ours.exec_out == go.exec_out);
  CHECK(ours.exec_code == go.exec_code);
  CHECK(ours.exec_code == 9);
  CHECK(ours.state_after_kill == go.state_after_kill);
  CHECK(ours.state_after_kill == "STOPPED");
}

}  // namespace
}  // namespace shim::test

namespace shim::test {
namespace {

TEST_CASE("ctr task metrics reads the cgroup v1 metrics from our shim",
          "[runc-e2e][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "met", {"/bin/sleep", "600"})).ok());
  auto metrics = s.fx.ctr_ok({"task", "metrics", "met"});
  CHECK(metrics.out.find("memory.usage_in_bytes") != std::string::npos);
  CHECK(metrics.out.find("pids.current             1") != std::string::npos);
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", "met"}).ok());
  REQUIRE(s.wait_status("met", "STOPPED", 10s));
  REQUIRE(s.fx.ctr_ok({"task", "rm", "met"}).ok());
}

TEST_CASE("an OOM kill publishes /tasks/oom before /tasks/exit",
          "[runc-e2e][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (::access("/sys/fs/cgroup/memory/memory.oom_control", F_OK) != 0 &&
      ::access("/sys/fs/cgroup/cgroup.controllers", F_OK) != 0) {
    LIBSHIM_SKIP("no memory cgroup controller on this machine");
  }
  Setup s;
  auto events = s.fx.subscribe_events();
  auto r = s.fx.ctr(s.run({"--rm", "--memory-limit", "8388608"}, "oom",
                          {"/bin/sh", "-c", "x=a; while true; do x=\"$x$x\"; done"}));
  CHECK(r.exit_code == 137);
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"oom\""}, 10s));
  auto topics = event_topics_for(*events, "oom");
  CHECK(topics == std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/oom",
                                           "/tasks/exit", "/tasks/delete"});
}

}  // namespace
}  // namespace shim::test

namespace shim::test {
namespace {

TEST_CASE("pause and resume change the task state and publish events",
          "[runc-e2e][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s;
  auto events = s.fx.subscribe_events();
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "pz", {"/bin/sleep", "600"})).ok());
  REQUIRE(s.fx.ctr_ok({"task", "pause", "pz"}).ok());
  CHECK(s.task_status("pz") == "PAUSED");
  auto again = s.fx.ctr({"task", "pause", "pz"});
  CHECK(again.exit_code != 0);
  CHECK(again.err.find("cannot pause a paused container") != std::string::npos);
  REQUIRE(s.fx.ctr_ok({"task", "resume", "pz"}).ok());
  CHECK(s.task_status("pz") == "RUNNING");
  REQUIRE(events->wait_for_line({"/tasks/resumed", "\"pz\""}, 5s));
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", "pz"}).ok());
  REQUIRE(s.wait_status("pz", "STOPPED", 10s));
  REQUIRE(s.fx.ctr_ok({"task", "rm", "pz"}).ok());
  // ctr returns before `ctr events` has printed the last event: wait for it.
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"pz\""}, 5s));
  CHECK(event_topics_for(*events, "pz") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/paused", "/tasks/resumed",
                                 "/tasks/exit", "/tasks/delete"});
}

}  // namespace
}  // namespace shim::test
