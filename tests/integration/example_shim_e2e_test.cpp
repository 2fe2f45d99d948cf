// shim-example end to end under the real containerd (Debian's 1.6 here), started by the
// test in a temp dir: ctr run exit codes, the event stream, detached tasks killed and
// exec'd, the shim going away with its task, and a containerd crash + restart.
#include <signal.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "support/containerd_fixture.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace std::string_literals;
using shim::test::PrivateContainerd;

const std::string kShimBinary = shim::test::shim_build_dir() + "/shim-example/containerd-shim-example-v1";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string shim_path() { return fs::canonical(kShimBinary).string(); }

// Arguments of `ctr run` for our runtime: the shim by absolute path, FIFOs in the
// fixture's dir (no --runc-root: that is for io.containerd.runc.v2 only).
std::vector<std::string> run_args(const PrivateContainerd& fx, bool detach,
                                  const std::string& rootfs, const std::string& id,
                                  const std::vector<std::string>& command) {
  std::vector<std::string> args = {"run", detach ? "-d" : "--rm", "--runtime", shim_path()};
  for (const auto& flag : fx.run_flags(/*with_runc_root=*/false)) args.push_back(flag);
  args.insert(args.end(), {"--rootfs", rootfs, id});
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

// Shim daemons serving this containerd (found by binary path and -address), excluding
// zombies and the short-lived start/delete actions.
std::vector<int> shim_daemons(const PrivateContainerd& fx) {
  const std::string binary = shim_path();
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (!std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::string cmdline = slurp(entry.path().string() + "/cmdline");
    if (!cmdline.starts_with(binary + '\0')) continue;
    if (cmdline.find('\0' + fx.grpc_address() + '\0') == std::string::npos) continue;
    if (cmdline.find("\0start\0"s) != std::string::npos) continue;
    if (cmdline.find("\0delete\0"s) != std::string::npos) continue;
    if (slurp(entry.path().string() + "/stat").find(") Z ") != std::string::npos) continue;
    pids.push_back(std::stoi(name));
  }
  return pids;
}

std::string shim_socket(const PrivateContainerd& fx, const std::string& id) {
  return shim::test::go_shim_socket_path(fx.grpc_address(), fx.ns(), id);
}

// The shim of `id` exits and removes its socket once its last task is deleted.
void check_shim_gone(const PrivateContainerd& fx, const std::string& id) {
  const std::string socket = shim_socket(fx, id);
  bool gone = false;
  for (int i = 0; i < 250 && !gone; ++i) {
    gone = shim_daemons(fx).empty() && !fs::exists(socket);
    if (!gone) std::this_thread::sleep_for(20ms);
  }
  INFO("socket " << socket << "; log:\n" << fx.log_tail());
  CHECK(shim_daemons(fx).empty());
  CHECK_FALSE(fs::exists(socket));
}

// Event lines about container `id` with `topic` (ctr events prints one per line:
// "<time> <namespace> <topic> <json>"). For /tasks/exit only the init's exit counts
// (its "id" is the container id; an exec's is the exec id).
std::vector<std::size_t> event_indexes(const std::vector<std::string>& lines,
                                       const std::string& topic, const std::string& id) {
  std::vector<std::size_t> indexes;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(" " + topic + " ") != std::string::npos &&
        lines[i].find("\"container_id\":\"" + id + "\"") != std::string::npos &&
        (topic != "/tasks/exit" || lines[i].find("\"id\":\"" + id + "\"") != std::string::npos)) {
      indexes.push_back(i);
    }
  }
  return indexes;
}

// The task's create, start, exit, delete events, each once and in this order; the exit
// carrying `exit_status` (omitted from the JSON when 0).
void check_task_events(shim::test::EventsSubscriber& events, const std::string& id,
                       int exit_status) {
  REQUIRE(events.wait_for_line({"/tasks/delete", "\"container_id\":\"" + id + "\""}, 10s));
  auto lines = events.lines();
  INFO("events:\n" << events.text());
  std::vector<std::size_t> order;
  for (const char* topic : {"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"}) {
    auto found = event_indexes(lines, topic, id);
    INFO(topic);
    REQUIRE(found.size() == 1);
    order.push_back(found[0]);
  }
  CHECK(std::is_sorted(order.begin(), order.end()));
  // /tasks/create already carries the init's pid (it exists, held, from Create on), and
  // start and exit name the same one.
  auto pid_of = [](const std::string& line) {
    std::size_t at = line.find("\"pid\":");
    return at == std::string::npos ? 0 : std::atoi(line.c_str() + at + 6);
  };
  int pid = pid_of(lines[order[0]]);
  CHECK(pid > 0);
  CHECK(pid_of(lines[order[1]]) == pid);
  CHECK(pid_of(lines[order[2]]) == pid);
  const std::string& exit_line = lines[order[2]];
  if (exit_status == 0) {
    CHECK(exit_line.find("\"exit_status\"") == std::string::npos);
  } else {
    CHECK(exit_line.find(fmt::format("\"exit_status\":{}", exit_status)) != std::string::npos);
  }
}

// "<ID> <PID> <STATUS>" of `ctr task ls` for `id`: the status, or empty.
std::string task_status(const PrivateContainerd& fx, const std::string& id, int* pid = nullptr) {
  std::istringstream lines(fx.ctr_ok({"task", "ls"}).out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name, status;
    int task_pid = 0;
    if (fields >> name >> task_pid >> status && name == id) {
      if (pid != nullptr) *pid = task_pid;
      return status;
    }
  }
  return {};
}

bool process_alive(int pid) {
  return pid > 0 && ::kill(pid, 0) == 0 &&
         slurp(fmt::format("/proc/{}/stat", pid)).find(") Z ") == std::string::npos;
}

}  // namespace

TEST_CASE("example shim: ctr run --rm returns the exit code, events in order, shim gone",
          "[example-e2e][sanitized]") {
  REQUIRE(fs::exists(kShimBinary));
  PrivateContainerd fx;
  const std::string rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs);
  auto events = fx.subscribe_events();

  struct Case {
    std::string id;
    std::string script;
    int exit_code;
    std::string out;
  };
  // The init is pid 1 of its own pid namespace: like a container's, it ignores signals
  // it has no handler for, SIGKILL from inside included, and sees only its own /proc and
  // /dev (where a background job's stdin, /dev/null, must exist).
  const Case cases[] = {{"r0", "echo hi", 0, "hi\n"},
                        {"r1", "exit 1", 1, ""},
                        {"r3", "echo hi; exit 3", 3, "hi\n"},
                        {"rk", "kill -9 $$; echo pid $$ survived", 0, "pid 1 survived\n"},
                        {"rp", "echo /proc/[0-9]*", 0, "/proc/1\n"},
                        {"rd", "echo x >/dev/null && head -c 3 /dev/zero | wc -c", 0, "3\n"},
                        {"r137", "sleep 5 & kill -9 $!; wait $!", 137, ""}};
  for (const auto& c : cases) {
    INFO("container " << c.id << ": " << c.script);
    auto run = fx.ctr(run_args(fx, false, rootfs, c.id, {"/bin/sh", "-c", c.script}), 30s);
    INFO(run.describe() << "\nlog:\n" << fx.log_tail());
    CHECK(run.exit_code == c.exit_code);
    CHECK(run.out == c.out);
    check_task_events(*events, c.id, c.exit_code);
    check_shim_gone(fx, c.id);
  }
  CHECK(fx.ctr_ok({"containers", "ls", "-q"}).out.empty());
}

TEST_CASE("example shim: stdin and stdout bytes go through unchanged", "[example-e2e][sanitized]") {
  PrivateContainerd fx;
  const std::string rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs);
  std::string input;
  for (int i = 0; i < 20000; ++i) input += fmt::format("line {} of the stdin round trip\n", i);
  input += std::string("\0\x01\xff binary tail", 16);
  // ctr 1.6 never sends CloseIO at the end of its stdin: read a known length.
  std::vector<std::string> args = {"run", "--rm", "--runtime", shim_path()};
  for (const auto& flag : fx.run_flags(false)) args.push_back(flag);
  args.insert(args.end(), {"--rootfs", rootfs, "stdin1", "/bin/head", "-c", std::to_string(input.size())});
  auto run = fx.ctr(args, 60s, input);
  INFO(run.describe().substr(0, 2000) << "\nlog:\n" << fx.log_tail());
  CHECK(run.exit_code == 0);
  CHECK(run.out.size() == input.size());
  CHECK(run.out == input);
  check_shim_gone(fx, "stdin1");
}

TEST_CASE("example shim: detached task, exec, ctr task kill gives 143", "[example-e2e][sanitized]") {
  PrivateContainerd fx;
  const std::string rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs);
  auto events = fx.subscribe_events();
  // pid 1 of a pid namespace gets SIGTERM only through a handler, as in any container.
  fx.ctr_ok(run_args(fx, true, rootfs, "d1",
                     {"/bin/sh", "-c", "trap 'exit 143' TERM; while true; do sleep 0.1; done"}));
  int pid = 0;
  CHECK(task_status(fx, "d1", &pid) == "RUNNING");
  CHECK(process_alive(pid));
  REQUIRE(shim_daemons(fx).size() == 1);
  CHECK(slurp(fx.bundle_dir("d1") + "/address") == "unix://" + shim_socket(fx, "d1"));

  // A few execs: each one's output must survive ctr opening its FIFOs late.
  for (const char* exec_id : {"e1", "e2", "e3"}) {
    std::vector<std::string> exec = {"task", "exec", "--exec-id", exec_id};
    for (const auto& flag : fx.run_flags(false)) exec.push_back(flag);
    exec.insert(exec.end(), {"d1", "/bin/echo", "hi"});
    auto exec_run = fx.ctr(exec, 30s);
    INFO(exec_id << ": " << exec_run.describe() << "\nlog:\n" << fx.log_tail());
    CHECK(exec_run.exit_code == 0);
    CHECK(exec_run.out == "hi\n");
  }
  auto exec_exit = events->wait_for_line({"/tasks/exit", "\"id\":\"e1\""}, 10s);
  REQUIRE(exec_exit);
  auto lines = events->lines();
  auto added = event_indexes(lines, "/tasks/exec-added", "d1");
  auto started = event_indexes(lines, "/tasks/exec-started", "d1");
  REQUIRE(added.size() >= 1);
  REQUIRE(started.size() >= 1);
  CHECK(lines[added[0]].find("\"exec_id\":\"e1\"") != std::string::npos);
  CHECK(added[0] < started[0]);
  CHECK(lines[started[0]].find("\"exec_id\":\"e1\"") != std::string::npos);
  CHECK(std::find(lines.begin(), lines.end(), *exec_exit) - lines.begin() >
        static_cast<std::ptrdiff_t>(started[0]));
  CHECK(task_status(fx, "d1") == "RUNNING");  // the exec's end leaves init alone

  fx.ctr_ok({"task", "kill", "d1"});  // SIGTERM
  auto exit = events->wait_for_line({"/tasks/exit", "\"id\":\"d1\""}, 10s);
  INFO("events:\n" << events->text());
  REQUIRE(exit);
  CHECK(exit->find("\"exit_status\":143") != std::string::npos);
  CHECK(task_status(fx, "d1") == "STOPPED");
  CHECK_FALSE(process_alive(pid));
  fx.ctr_ok({"task", "rm", "d1"});
  fx.ctr_ok({"container", "rm", "d1"});
  check_task_events(*events, "d1", 143);
  check_shim_gone(fx, "d1");
}

TEST_CASE("example shim: a task survives a containerd kill -9 and restart", "[example-e2e][sanitized]") {
  PrivateContainerd fx;
  const std::string rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs);
  fx.ctr_ok(run_args(fx, true, rootfs, "k1", {"/bin/sleep", "1000"}));
  int pid = 0;
  REQUIRE(task_status(fx, "k1", &pid) == "RUNNING");
  auto shims = shim_daemons(fx);
  REQUIRE(shims.size() == 1);

  fx.kill9();
  REQUIRE_FALSE(fx.running());
  CHECK(process_alive(shims[0]));
  CHECK(process_alive(pid));
  fx.start();
  INFO("log:\n" << fx.log_tail());
  int pid_after = 0;
  CHECK(task_status(fx, "k1", &pid_after) == "RUNNING");  // reconnected through `address`
  CHECK(pid_after == pid);
  CHECK(shim_daemons(fx) == shims);

  // Events reach the new containerd: the shim's forwarder reconnected.
  auto events = fx.subscribe_events();
  fx.ctr_ok({"task", "kill", "-s", "KILL", "k1"});  // the init has no TERM handler
  auto exit = events->wait_for_line({"/tasks/exit", "\"id\":\"k1\""}, 10s);
  INFO("events:\n" << events->text());
  REQUIRE(exit);
  CHECK(exit->find("\"exit_status\":137") != std::string::npos);
  CHECK(task_status(fx, "k1") == "STOPPED");
  fx.ctr_ok({"task", "rm", "k1"});
  CHECK(events->wait_for_line({"/tasks/delete", "\"container_id\":\"k1\""}, 10s));
  fx.ctr_ok({"container", "rm", "k1"});
  CHECK(task_status(fx, "k1").empty());
  check_shim_gone(fx, "k1");
}

TEST_CASE("example shim: when the shim dies, containerd's delete action cleans up",
          "[example-e2e][sanitized]") {
  PrivateContainerd fx;
  const std::string rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs);
  auto events = fx.subscribe_events();
  fx.ctr_ok(run_args(fx, true, rootfs, "s1", {"/bin/sleep", "1000"}));
  int pid = 0;
  REQUIRE(task_status(fx, "s1", &pid) == "RUNNING");
  auto shims = shim_daemons(fx);
  REQUIRE(shims.size() == 1);

  REQUIRE(::kill(shims[0], SIGKILL) == 0);
  // containerd sees the shim go, runs `<shim> delete` (which kills the orphaned
  // container process) and publishes exit and delete with its DeleteResponse.
  auto exit = events->wait_for_line({"/tasks/exit", "\"id\":\"s1\""}, 10s);
  INFO("events:\n" << events->text() << "\nlog:\n" << fx.log_tail());
  REQUIRE(exit);
  CHECK(exit->find("\"exit_status\":137") != std::string::npos);
  CHECK(exit->find(fmt::format("\"pid\":{}", pid)) != std::string::npos);
  CHECK(events->wait_for_line({"/tasks/delete", "\"container_id\":\"s1\""}, 10s));
  bool killed = false;
  for (int i = 0; i < 100 && !killed; ++i) {
    killed = !process_alive(pid);
    if (!killed) std::this_thread::sleep_for(20ms);
  }
  CHECK(killed);
  CHECK(task_status(fx, "s1").empty());
  fx.ctr_ok({"container", "rm", "s1"});
  // A SIGKILLed shim cannot remove its socket (the Go shim leaves it too; the next
  // `start` for that group replaces it). Don't leave it in /run/containerd/s.
  ::unlink(shim_socket(fx, "s1").c_str());
}
