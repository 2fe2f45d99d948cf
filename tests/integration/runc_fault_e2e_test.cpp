// Faults under a real containerd and runc, each with a count of what was lost (must be 0;
// the counts are printed as "LIBSHIM-FAULT: <name> ..." lines for docs/reliability.md):
//   - containerd kill -9 with 20 running tasks; 10 of them exit and 5 execs finish while
//     it is down; after the restart every exit is known with its status and every
//     /tasks/exit is published once, in order;
//   - containerd first stopped (reading neither events nor the log FIFO), then gone, for
//     a minute while ~1,000 events are produced: the shim keeps answering, its memory
//     stays bounded, and every event arrives, once and in order, after the return;
//   - the `delete` action removes the socket of a shim that died, grouped or not.
//
// After a restart the shims would forward their queued events within ~2 s (their
// backoff), possibly before `ctr events` is subscribed. So the restarted containerd
// listens for ttrpc on a new path, and the old path (the shims' TTRPC_ADDRESS) becomes a
// symlink to it only once the subscriber is in place: nothing can be missed by the test.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "shim/pb/containerd/task_v2.pb.h"
#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"
#include "support/wait_until.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;
namespace task = containerd::task::v2;  // same messages as v3

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Restarts a stopped (killed) containerd on a new ttrpc path; see the file comment.
// Returns the old path, to be linked once the subscriber runs.
std::string restart_on_hidden_ttrpc(PrivateContainerd& fx) {
  std::string old_path = fx.ttrpc_address();
  std::string config = read_text(fx.config_path());
  std::string quoted = fmt::format("\"{}\"", old_path);
  auto at = config.find(quoted);
  REQUIRE(at != std::string::npos);
  std::string new_path = fx.dir() + "/c2.sock.ttrpc";
  config.replace(at, quoted.size(), fmt::format("\"{}\"", new_path));
  std::ofstream(fx.config_path()) << config;
  ::unlink(old_path.c_str());  // the dead daemon's socket: the shims now get ENOENT
  fx.start();
  return old_path;
}

void reveal_ttrpc(PrivateContainerd& fx, const std::string& old_path) {
  REQUIRE(::symlink((fx.dir() + "/c2.sock.ttrpc").c_str(), old_path.c_str()) == 0);
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// Whether every thread of `pid` is stopped: kill(SIGSTOP) only queues the stop, and a
// thread still running may read (and publish) one more event before it takes effect.
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::string stat = read_text((task.path() / "stat").string());
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) continue;  // gone meanwhile
    const char state = stat[close + 2];
    if (state != 'T' && state != 't') return false;
  }
  return !ec;
}

// Pids whose command line contains `needle` (the execs waiting for their go-file).
std::vector<pid_t> pids_with_cmdline(const std::string& needle) {
  std::vector<pid_t> found;
  auto r = run_command({"pgrep", "-f", needle});
  std::istringstream in(r.out);
  for (pid_t pid; in >> pid;) found.push_back(pid);
  return found;
}

// "<ts> <ns> /tasks/exit {json}" -> the value of "key" in the json ("" if absent).
std::string json_field(const std::string& line, const std::string& key) {
  std::string quoted = fmt::format("\"{}\":", key);
  auto at = line.find(quoted);
  if (at == std::string::npos) return {};
  at += quoted.size();
  if (line[at] == '"') {
    auto end = line.find('"', at + 1);
    return line.substr(at + 1, end - at - 1);
  }
  auto end = line.find_first_of(",}", at);
  return line.substr(at, end - at);
}

// Losses among the published /tasks/exit lines: 10 container exits (c<i>, status 10+i)
// and 5 execs of c19 (e<k>, status 40+k, in the order they finished).
struct ExitTally {
  int lost = 0, wrong = 0, duplicated = 0;
  std::vector<std::string> exec_order;
  std::vector<std::string> unseen;  // containers c<i> with no exit line

  explicit ExitTally(const std::vector<std::string>& lines) {
    for (int i = 0; i < 10; ++i) {
      int seen = 0;
      for (const auto& line : lines) {
        if (json_field(line, "id") != fmt::format("c{}", i)) continue;
        ++seen;
        wrong += json_field(line, "exit_status") != std::to_string(10 + i);
      }
      if (seen == 0) unseen.push_back(fmt::format("c{}", i));
      duplicated += seen > 1;
    }
    lost += static_cast<int>(unseen.size());
    for (const auto& line : lines) {
      if (json_field(line, "container_id") != "c19") continue;
      std::string id = json_field(line, "id");
      exec_order.push_back(id);
      int k = id.size() == 2 && id[0] == 'e' ? id[1] - '0' : -1;
      wrong += k < 0 || json_field(line, "exit_status") != std::to_string(40 + k);
    }
    for (int k = 0; k < 5; ++k) {
      auto n = std::count(exec_order.begin(), exec_order.end(), fmt::format("e{}", k));
      lost += n == 0;
      duplicated += n > 1;
    }
  }
};

// containerd 1.7 and later delete a task found stopped at restart themselves, during
// their init, before they serve anything: a shim that is no sandbox and whose Pids is
// empty is "leaked" (core/runtime/v2/shim_load.go, loadShims; runtime/v2/shim_load.go in
// 1.7). containerd publishes nothing for it and keeps no status; the shim's queued
// /tasks/exit and /tasks/delete reach a subscriber only if containerd serves within the
// shim's flush at shutdown (5 s), which a loaded machine can miss. (The shim then logs
// that it could not deliver, but containerd has closed that shim's log FIFO by then.)
// Such a container was cleaned at restart: containerd logged it (and lists no task: the
// caller's check).
bool cleaned_at_restart(RuncE2e& s, const std::string& id) {
  if (!s.fx.version().at_least(1, 7)) return false;
  std::regex cleaned(fmt::format("msg=\"cleaning leaked shim process\".* id={}( |$)", id));
  std::ifstream log(s.fx.log_path());
  for (std::string line; std::getline(log, line);) {
    if (std::regex_search(line, cleaned)) return true;
  }
  return false;
}

// The status containerd has for stopped task `id`: it lists the task stopped and the
// State it asks the shim for carries the status (ctr prints none itself); or, under 1.7
// and 2.x, which delete a task found stopped at restart (see cleaned_at_restart), the
// shim published the status in /tasks/delete once containerd served. nullopt: neither,
// and the container was cleaned at restart.
std::optional<std::uint32_t> status_known_to_containerd(RuncE2e& s, EventsSubscriber& events,
                                                        const std::string& id) {
  std::string listed = s.task_status(id);
  if (listed.empty()) {
    // The shim of a cleaned container has finished its flush by now.
    bool cleaned = cleaned_at_restart(s, id);
    auto deleted = events.wait_for_line(
        {"/tasks/delete", fmt::format("\"container_id\":\"{}\"", id)}, cleaned ? 1s : 10s);
    if (!deleted && cleaned) return std::nullopt;
    REQUIRE(deleted);
    return static_cast<std::uint32_t>(std::atoi(json_field(*deleted, "exit_status").c_str()));
  }
  CHECK(listed == "STOPPED");
  task::StateRequest state;
  state.set_id(id);
  auto r = call_task_api(unix_path_of(s.fx.shim_address(id)), s.fx.ns(), "State",
                         state.SerializeAsString(), 10s, task_service_for(s.fx.version()));
  task::StateResponse response;
  REQUIRE(r.status.ok());
  REQUIRE(response.ParseFromString(r.payload));
  CHECK(s.fx.ctr({"task", "rm", id}).ok());
  return response.exit_status();
}

// 20 containers c<i> whose init exits 10+i on SIGTERM, and 5 execs e<k> in c19 that exit
// 40+k once /tmp/<ns>-go<k> exists (the rootfs is shared with the host). Returns the pids.
std::vector<pid_t> start_twenty_with_execs(RuncE2e& s) {
  const std::string& ns = s.fx.ns();
  for (int i = 0; i < 20; ++i) {
    std::string script = fmt::format("trap 'exit {}' TERM; /bin/sleep 600 & wait", 10 + i);
    REQUIRE(s.fx.ctr_ok(s.run({"-d"}, fmt::format("c{}", i), {"/bin/sh", "-c", script})).ok());
  }
  std::vector<pid_t> pids;
  for (int i = 0; i < 20; ++i) {
    REQUIRE(s.wait_status(fmt::format("c{}", i), "RUNNING", 10s));
    pids.push_back(s.task_pid(fmt::format("c{}", i)));
    REQUIRE(pids.back() > 0);
  }
  ::mkdir((s.rootfs + "/tmp").c_str(), 0777);
  for (int k = 0; k < 5; ++k) {
    std::string script = fmt::format(
        "while [ ! -e /tmp/{0}-go{1} ]; do /bin/sleep 0.05; done; exit {2}", ns, k, 40 + k);
    REQUIRE(s.fx.ctr_ok({"task", "exec", "--detach", "--exec-id", fmt::format("e{}", k), "c19",
                         "/bin/sh", "-c", script})
                .ok());
  }
  REQUIRE(wait_until([&] { return pids_with_cmdline(ns + "-go").size() == 5; }, 10s));
  return pids;
}

TEST_CASE("fault: containerd kill -9 with 20 tasks, 10 exits and 5 execs while it is down",
          "[fault][runc-e2e][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  const std::string& ns = s.fx.ns();
  std::vector<pid_t> pids = start_twenty_with_execs(s);

  s.fx.kill9();
  for (int i = 0; i < 10; ++i) ::kill(pids[i], SIGTERM);
  for (int i = 0; i < 10; ++i) REQUIRE(wait_until([&] { return process_gone(pids[i]); }, 10s));
  for (int k = 0; k < 5; ++k) {  // one after the other: their order is checked
    std::ofstream(fmt::format("{}/tmp/{}-go{}", s.rootfs, ns, k)) << "go";
    std::string mine = fmt::format("{}-go{} ", ns, k);
    REQUIRE(wait_until([&] { return pids_with_cmdline(mine).empty(); }, 10s));
  }
  REQUIRE(!s.fx.running());  // all 15 exits happened while containerd was down

  std::string old_path = restart_on_hidden_ttrpc(s.fx);
  auto events = s.fx.subscribe_events({"topic~=\"^/tasks/(exit|delete)$\""});
  reveal_ttrpc(s.fx, old_path);
  auto exit_lines = [&] {
    std::vector<std::string> out;
    for (const auto& line : events->lines()) {
      if (line.find("/tasks/exit") != std::string::npos) out.push_back(line);
    }
    return out;
  };
  wait_until([&] { return exit_lines().size() >= 15; }, 30s);
  std::this_thread::sleep_for(1s);  // room for a duplicate to show up
  auto lines = exit_lines();
  INFO(events->text());
  ExitTally tally(lines);
  CHECK(tally.exec_order == std::vector<std::string>{"e0", "e1", "e2", "e3", "e4"});
  int cleaned = 0, cleaned_without_exit = 0;
  for (int i = 0; i < 20; ++i) {
    std::string id = fmt::format("c{}", i);
    if (i >= 10) {
      CHECK(s.task_status(id) == "RUNNING");
      continue;
    }
    std::optional<std::uint32_t> status = status_known_to_containerd(s, *events, id);
    if (!status) {
      ++cleaned;
      cleaned_without_exit += std::count(tally.unseen.begin(), tally.unseen.end(), id) > 0;
      continue;
    }
    CHECK(*status == static_cast<std::uint32_t>(10 + i));
    tally.wrong += *status != static_cast<std::uint32_t>(10 + i);
  }
  // Lost: an exit neither published nor explained by containerd's cleanup at restart.
  WARN(
      fmt::format("LIBSHIM-FAULT: containerd-kill9-20-tasks containerd={} exits_expected=15 "
                  "exits_published={} lost={} wrong_status={} duplicated={} "
                  "cleaned_at_restart={} cleaned_exit_unpublished={}",
                  s.fx.version().text, lines.size(), tally.lost - cleaned_without_exit, tally.wrong,
                  tally.duplicated, cleaned, cleaned_without_exit));
  CHECK(lines.size() == static_cast<std::size_t>(15 - cleaned_without_exit));
  CHECK(tally.lost == cleaned_without_exit);
  CHECK(tally.wrong == 0);
  CHECK(tally.duplicated == 0);
}

// One exec through the shim's task API, as containerd would run it: Exec, Start, Wait,
// Delete. Each reply within `deadline`; returns the slowest call.
std::chrono::milliseconds direct_exec(const std::string& address, const std::string& ns,
                                      const char* service, const std::string& id,
                                      const std::string& exec_id) {
  constexpr auto kDeadline = 10s;
  auto began = std::chrono::steady_clock::now();
  auto slowest = 0ms;
  auto call = [&](const char* method, const std::string& payload) {
    auto start = std::chrono::steady_clock::now();
    auto r = call_task_api(address, ns, method, payload, kDeadline, service);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    slowest = std::max(slowest, took);
    INFO(method << " " << exec_id << ": " << r.status.to_string());
    REQUIRE(r.status.ok());
    return r;
  };
  task::ExecProcessRequest exec;
  exec.set_id(id);
  exec.set_exec_id(exec_id);
  exec.mutable_spec()->set_type_url("types.containerd.io/opencontainers/runtime-spec/1/Process");
  exec.mutable_spec()->set_value(
      R"({"args":["/bin/true"],"cwd":"/","env":["PATH=/bin"],"user":{"uid":0,"gid":0}})");
  call("Exec", exec.SerializeAsString());
  task::StartRequest start;
  start.set_id(id);
  start.set_exec_id(exec_id);
  call("Start", start.SerializeAsString());
  task::WaitRequest wait;
  wait.set_id(id);
  wait.set_exec_id(exec_id);
  call("Wait", wait.SerializeAsString());
  task::DeleteRequest remove;
  remove.set_id(id);
  remove.set_exec_id(exec_id);
  call("Delete", remove.SerializeAsString());
  (void)began;
  return slowest;
}

std::size_t rss_kib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// Under the system's containerd only: a minute is a lot of CI time to spend three times.
TEST_CASE("fault: containerd stopped then gone for a minute while 1,000 events are produced",
          "[fault][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  const char* env_seconds = std::getenv("LIBSHIM_FAULT_AWAY_SECONDS");
  const auto away = std::chrono::seconds(env_seconds ? std::atoi(env_seconds) : 60);
  constexpr int kExecs = 334;  // 3 events each: exec-added, exec-started, exit
  RuncE2e s;
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "busy", {"/bin/sleep", "100000"})).ok());
  REQUIRE(s.wait_status("busy", "RUNNING", 10s));
  std::string address = unix_path_of(s.fx.shim_address("busy"));
  REQUIRE(!address.empty());
  auto shims = live_shims(our_runc_shim(), s.fx.ns());
  REQUIRE(shims.size() == 1);
  const char* service = task_service_for(s.fx.version());
  std::size_t rss_before = rss_kib(shims[0]), rss_peak = rss_before;

  auto began = std::chrono::steady_clock::now();
  auto slowest = 0ms;
  // First containerd is stopped: it reads neither the events nor the log FIFO.
  ::kill(s.fx.pid(), SIGSTOP);
  // Events that reach containerd before it stops are published to no one (the test
  // subscribes after the restart): produce them only once it has stopped.
  REQUIRE(wait_until([&] { return all_threads_stopped(s.fx.pid()); }, 10s));
  for (int n = 0; n < kExecs; ++n) {
    if (n == kExecs / 3) s.fx.kill9();  // then it is gone
    slowest =
        std::max(slowest, direct_exec(address, s.fx.ns(), service, "busy", fmt::format("x{}", n)));
    rss_peak = std::max(rss_peak, rss_kib(shims[0]));
  }
  if (s.fx.running()) s.fx.kill9();
  while (std::chrono::steady_clock::now() - began < away) {
    rss_peak = std::max(rss_peak, rss_kib(shims[0]));
    std::this_thread::sleep_for(500ms);
  }
  auto away_for =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - began);

  std::string old_path = restart_on_hidden_ttrpc(s.fx);
  auto events = s.fx.subscribe_events({"topic~=\"^/tasks/(exec-added|exec-started|exit)$\""});
  reveal_ttrpc(s.fx, old_path);
  auto produced = [&] {
    std::vector<std::string> out;
    for (const auto& line : events->lines()) {
      std::string id = json_field(line, "exec_id");
      if (id.empty()) id = json_field(line, "id");
      if (id.empty() || id[0] != 'x') continue;
      std::string topic = line.find("/tasks/exit") != std::string::npos         ? "exit"
                          : line.find("/tasks/exec-added") != std::string::npos ? "added"
                                                                                : "started";
      out.push_back(topic + " " + id);
    }
    return out;
  };
  wait_until([&] { return produced().size() >= 3 * kExecs; }, 60s);
  std::this_thread::sleep_for(1s);
  auto got = produced();
  std::vector<std::string> expected;
  for (int n = 0; n < kExecs; ++n) {
    for (const char* topic : {"added", "started", "exit"})
      expected.push_back(fmt::format("{} x{}", topic, n));
  }
  std::size_t in_order = 0;
  while (in_order < got.size() && in_order < expected.size() && got[in_order] == expected[in_order])
    ++in_order;
  std::size_t lost = expected.size() > got.size() ? expected.size() - got.size() : 0;
  auto log = read_text(s.fx.log_path());
  bool drop_logged = log.find("event queue full") != std::string::npos;
  WARN(
      fmt::format("LIBSHIM-FAULT: containerd-away containerd={} away_s={} events_expected={} "
                  "events_received={} in_order_prefix={} lost={} slowest_call_ms={} "
                  "shim_rss_kib_before={} shim_rss_kib_peak={} drop_logged={}",
                  s.fx.version().text, away_for.count(), expected.size(), got.size(), in_order,
                  lost, slowest.count(), rss_before, rss_peak, drop_logged));
  CHECK(got.size() == expected.size());
  CHECK(in_order == expected.size());
  CHECK(lost == 0);
  CHECK(!drop_logged);                       // 1,002 events are far below the bound
  CHECK(slowest < 5s);                       // the loop never blocked on containerd
  CHECK(rss_peak < rss_before + 16 * 1024);  // bounded: the outbox, not a leak
  CHECK(s.task_status("busy") == "RUNNING");
}

// The socket path of `id`'s shim, from the address containerd recorded.
std::string socket_of(const PrivateContainerd& fx, const std::string& id) {
  return unix_path_of(fx.shim_address(id));
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

TEST_CASE("fault: the delete action removes the socket of a shim that died, grouped or not",
          "[fault][runc-e2e][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  auto events = s.fx.subscribe_events({"topic==\"/tasks/delete\""});
  std::string group = fmt::format("io.containerd.runc.v2.group={}-pod", s.fx.ns());
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "solo", {"/bin/sleep", "600"})).ok());
  REQUIRE(s.fx.ctr_ok(s.run({"-d", "--annotation", group}, "pod-a", {"/bin/sleep", "600"})).ok());
  REQUIRE(s.fx.ctr_ok(s.run({"-d", "--annotation", group}, "pod-b", {"/bin/sleep", "600"})).ok());
  std::string solo = socket_of(s.fx, "solo"), pod = socket_of(s.fx, "pod-a");
  REQUIRE(!solo.empty());
  REQUIRE(pod == socket_of(s.fx, "pod-b"));
  REQUIRE(exists(solo));
  REQUIRE(exists(pod));
  auto shims = live_shims(our_runc_shim(), s.fx.ns());
  REQUIRE(shims.size() == 2);
  for (pid_t pid : shims) ::kill(pid, SIGKILL);
  for (const char* id : {"solo", "pod-a", "pod-b"}) {
    CHECK(events->wait_for_line({"/tasks/delete", fmt::format("\"{}\"", id)}, 20s));
  }
  int left = exists(solo) + exists(pod);
  WARN(fmt::format("LIBSHIM-FAULT: shim-kill9-socket containerd={} shims_killed=2 sockets_left={}",
                   s.fx.version().text, left));
  CHECK(!exists(solo));
  CHECK(!exists(pod));
}

}  // namespace
}  // namespace shim::test
