// The process tier's task service, rule by rule: State, Wait, Pids, Stats, CloseIO and
// ResizePty, with the code and text containerd gets (the Go runc shim's), over a scripted
// runtime.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/pb/runc/runc_options.pb.h"
#include "shim/timestamp.h"
#include "unit/task/tier_rules.h"

using namespace tier_rules;

namespace {

std::int64_t unix_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

// ---- State ------------------------------------------------------------------------------

TEST_CASE("tier State of init: pid, status, stdio, exit status and time once stopped", "[tier]") {
  Tier tier;
  task::CreateTaskRequest create = create_request(tier, "c1");
  REQUIRE(tier.call<task::CreateTaskResponse>("Create", create).status.ok());
  auto state = state_of(tier, "c1");
  CHECK(state.id() == "c1");
  CHECK(state.bundle() == create.bundle());
  CHECK(state.pid() == 4002);
  CHECK(state.status() == types::CREATED);
  CHECK(state.exit_status() == 0);
  CHECK(state.exited_at().seconds() == shim::kGoZeroTimeSeconds);
  REQUIRE(tier.start("c1").status.ok());
  CHECK(state_of(tier, "c1").status() == types::RUNNING);
  const auto before = unix_seconds(std::chrono::system_clock::now());
  exit_recorded(tier, 4002, 137, "c1");
  const auto after = unix_seconds(std::chrono::system_clock::now());
  state = state_of(tier, "c1");
  CHECK(state.pid() == 4002);
  CHECK(state.exit_status() == 137);
  CHECK(state.exited_at().seconds() >= before);
  CHECK(state.exited_at().seconds() <= after);
  CHECK(outcome(state_call(tier, "c9")) == "NotFound: container not created: not found");
}

TEST_CASE("tier State of an exec: its own pid and status, exit status once stopped", "[tier]") {
  Tier tier;
  run(tier, "c1");
  REQUIRE(tier.exec("c1", "e1").status.ok());
  auto state = state_of(tier, "c1", "e1");
  CHECK(state.id() == "e1");
  CHECK(state.pid() == 0);  // not started: no process yet
  CHECK(state.status() == types::CREATED);
  REQUIRE(tier.start("c1", "e1").status.ok());
  state = state_of(tier, "c1", "e1");
  CHECK(state.pid() == 4003);
  CHECK(state.status() == types::RUNNING);
  exit_recorded(tier, 4003, 2, "c1", "e1");
  state = state_of(tier, "c1", "e1");
  CHECK(state.exit_status() == 2);
  CHECK(state.exited_at().seconds() > 0);
  CHECK(state_of(tier, "c1").status() == types::RUNNING);  // the init is untouched
  CHECK(outcome(state_call(tier, "c1", "e9")) == "NotFound: process does not exist e9: not found");
}

TEST_CASE(
    "tier State of a running exec of a pausing or paused container shows the container's state",
    "[tier]") {
  Tier tier;
  tier.script.pause_resume = true;
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  tier.script.hold("pause");
  task::PauseRequest pause;
  pause.set_id("c1");
  auto pausing = tier.call_async("Pause", pause);
  REQUIRE(tier.script.wait_until_held("pause"));
  CHECK(tier.state("c1") == types::PAUSING);
  CHECK(tier.state("c1", "e1") == types::PAUSING);
  tier.script.release("pause");
  REQUIRE(pausing.get().status.ok());
  CHECK(tier.state("c1") == types::PAUSED);
  CHECK(tier.state("c1", "e1") == types::PAUSED);
  REQUIRE(tier.resume("c1").status.ok());
  CHECK(tier.state("c1", "e1") == types::RUNNING);
}

// Go's execProcess.Status answers the container's paused/pausing before it looks at the
// exec's own state, so a created or stopped exec of a paused container is PAUSED too.
TEST_CASE("tier State of a created or stopped exec of a paused container is PAUSED, as in Go",
          "[tier]") {
  Tier tier;
  tier.script.pause_resume = true;
  run(tier, "c1");
  REQUIRE(tier.exec("c1", "e1").status.ok());
  run_exec(tier, "c1", "e2", 4102);
  exit_recorded(tier, 4102, 0, "c1", "e2");
  REQUIRE(tier.pause("c1").status.ok());
  CHECK(tier.state("c1", "e1") == types::PAUSED);
  CHECK(tier.state("c1", "e2") == types::PAUSED);
  REQUIRE(tier.resume("c1").status.ok());
  CHECK(tier.state("c1", "e1") == types::CREATED);
  CHECK(tier.state("c1", "e2") == types::STOPPED);
}

// ---- Wait -------------------------------------------------------------------------------

TEST_CASE("tier Wait: answered once the TaskExit went out, with its status and time", "[tier]") {
  Tier tier;
  run(tier, "c1", kSharedPidSpec);
  auto waiting = tier.call_async("Wait", wait_request("c1"));
  CHECK(tier.state("c1") == types::RUNNING);  // a sync point: Wait waits before the exit
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.hold_kill = true;  // the TaskExit waits for the kill of the container's rest
  }
  exit_recorded(tier, 4002, 137, "c1");
  // State said stopped after the exit was handled: a Wait answered then would have come
  // before that State's answer on this connection.
  CHECK_FALSE(answered(waiting));
  CHECK_FALSE(tier.published("/tasks/exit"));
  tier.script.release_kill();
  task::WaitResponse response;
  REQUIRE(response.ParseFromString(waiting.get().payload));
  REQUIRE(tier.published("/tasks/exit"));  // published before Wait was answered
  containerd::events::TaskExit exit;
  REQUIRE(exit.ParseFromString(tier.publisher.events().back().bytes));
  CHECK(response.exit_status() == 137);
  CHECK(response.exited_at().seconds() == exit.exited_at().seconds());
  CHECK(response.exited_at().nanos() == exit.exited_at().nanos());
  // Once published, Wait answers at once, the same.
  task::WaitResponse again;
  REQUIRE(tier.call("Wait", wait_request("c1"), &again).status.ok());
  CHECK(again.exit_status() == 137);
  CHECK(again.exited_at().nanos() == exit.exited_at().nanos());
}

TEST_CASE("tier Wait of an exec: answered at its TaskExit, unknown execs are NotFound", "[tier]") {
  Tier tier;
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  auto waiting = tier.call_async("Wait", wait_request("c1", "e1"));
  CHECK(tier.state("c1", "e1") == types::RUNNING);  // a sync point: Wait was handled before
  CHECK_FALSE(answered(waiting));
  tier.reaper.exit(4101, 5);
  task::WaitResponse response;
  REQUIRE(response.ParseFromString(waiting.get().payload));
  CHECK(response.exit_status() == 5);
  CHECK(tier.trail("c1").back() == "/tasks/exit e1");
  CHECK(outcome(tier.call<task::WaitResponse>("Wait", wait_request("c1", "e9"))) ==
        "NotFound: process does not exist e9: not found");
  CHECK(outcome(tier.call<task::WaitResponse>("Wait", wait_request("c9"))) ==
        "NotFound: container not created: not found");
}

// ---- Pids, Stats ------------------------------------------------------------------------

TEST_CASE("tier Pids: the runtime's pids, exec details on the pids of execs", "[tier]") {
  Tier tier;
  tier.script.implemented = {"pids"};
  tier.script.pid_list = {4002, 4101, 4500};
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  task::PidsRequest request;
  request.set_id("c1");
  task::PidsResponse response;
  REQUIRE(tier.call("Pids", request, &response).status.ok());
  REQUIRE(response.processes_size() == 3);
  CHECK(response.processes(0).pid() == 4002);
  CHECK_FALSE(response.processes(0).has_info());
  CHECK(response.processes(1).pid() == 4101);
  CHECK(response.processes(1).info().type_url() == "containerd.runc.v1.ProcessDetails");
  containerd::runc::v1::ProcessDetails details;
  REQUIRE(details.ParseFromString(response.processes(1).info().value()));
  CHECK(details.exec_id() == "e1");
  CHECK(response.processes(2).pid() == 4500);
  CHECK_FALSE(response.processes(2).has_info());

  tier.script.fails["pids"] = shim::unknown("runc ps failed");
  CHECK(outcome(tier.call<task::PidsResponse>("Pids", request)) == "Unknown: runc ps failed");
}

TEST_CASE("tier Pids without the runtime's: the init's cgroup, or NotFound without one", "[tier]") {
  Tier tier;
  script_pid(tier, "c1", kNoSuchPid);  // no process, so no cgroup was loaded
  run(tier, "c1");
  task::PidsRequest request;
  request.set_id("c1");
  CHECK(outcome(tier.call<task::PidsResponse>("Pids", request)) ==
        "NotFound: cgroup does not exist: not found");
  // A real init: its cgroup (the test's own) lists it, and the exec it is scripted as.
  SleepingChild init;
  SleepingChild exec;
  script_pid(tier, "c22", init.pid());
  run(tier, "c22");
  run_exec(tier, "c22", "e1", exec.pid());
  request.set_id("c22");
  task::PidsResponse response;
  REQUIRE(tier.call("Pids", request, &response).status.ok());
  bool init_listed = false;
  bool exec_listed = false;
  std::string listed;
  for (const auto& process : response.processes()) {
    listed += fmt::format(" {}{}", process.pid(), process.has_info() ? "+info" : "");
    init_listed = init_listed || (process.pid() == init.pid() && !process.has_info());
    exec_listed = exec_listed || (process.pid() == exec.pid() && process.has_info());
  }
  INFO("init " << init.pid() << ", exec " << exec.pid() << ", listed:" << listed);
  CHECK(init_listed);
  CHECK(exec_listed);
}

TEST_CASE("tier Stats: the runtime's metrics, else the init's cgroup's, else NotFound", "[tier]") {
  Tier tier;
  script_pid(tier, "c1", kNoSuchPid);  // no process, so no cgroup was loaded
  run(tier, "c1");
  task::StatsRequest request;
  request.set_id("c1");
  CHECK(outcome(tier.call<task::StatsResponse>("Stats", request)) ==
        "NotFound: cgroup does not exist: not found");
  SleepingChild init;
  script_pid(tier, "c22", init.pid());
  run(tier, "c22");
  request.set_id("c22");
  task::StatsResponse response;
  REQUIRE(tier.call("Stats", request, &response).status.ok());
  CHECK((response.stats().type_url() == "io.containerd.cgroups.v1.Metrics" ||
         response.stats().type_url() == "io.containerd.cgroups.v2.Metrics"));
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.implemented = {"stats"};
  }
  REQUIRE(tier.call("Stats", request, &response).status.ok());
  CHECK(response.stats().type_url() == "scripted.Metrics");
  CHECK(response.stats().value() == "c22");
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.fails["stats"] = shim::unknown("no metrics");
  }
  CHECK(outcome(tier.call<task::StatsResponse>("Stats", request)) == "Unknown: no metrics");
  request.set_id("c9");
  CHECK(outcome(tier.call<task::StatsResponse>("Stats", request)) ==
        "NotFound: container not created: not found");
}

// ---- CloseIO ----------------------------------------------------------------------------

// The shim keeps a writer of the stdin FIFO open, so the process sees no EOF when the
// client closes its end; CloseIO closes it (Go: the process's Stdin().Close()).
TEST_CASE("tier CloseIO: the process's stdin ends once the client's end is closed too", "[tier]") {
  Tier tier;
  const std::string fifo = tier.dir.sub("c1-stdin");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  task::CreateTaskRequest create = create_request(tier, "c1");
  create.set_stdin(fifo);
  REQUIRE(tier.call<task::CreateTaskResponse>("Create", create).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  shim::UniqueFd client(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  REQUIRE(client.valid());
  int process_stdin = -1;
  {
    std::lock_guard lock(tier.script.mu);
    process_stdin = tier.script.stdin_of["c1"].get();
  }
  REQUIRE(process_stdin >= 0);
  REQUIRE(::fcntl(process_stdin, F_SETFL, O_NONBLOCK) == 0);
  auto read_all = [&](std::string* got) {
    char buffer[64];
    ssize_t n = ::read(process_stdin, buffer, sizeof buffer);
    if (n > 0) got->append(buffer, static_cast<std::size_t>(n));
    return n;
  };
  std::string got;
  REQUIRE(::write(client.get(), "ping", 4) == 4);
  CHECK(shim::test::eventually([&] { return read_all(&got) >= 0 && got == "ping"; }));

  task::CloseIORequest close;
  close.set_id("c1");
  close.set_stdin(true);
  REQUIRE(tier.call<shim::pb::Empty>("CloseIO", close).status.ok());
  REQUIRE(::write(client.get(), "pong", 4) == 4);  // the client's end still carries data
  CHECK(shim::test::eventually([&] { return read_all(&got) >= 0 && got == "pingpong"; }));
  client.reset();
  CHECK(shim::test::eventually([&] { return read_all(&got) == 0; }));  // EOF

  close.set_exec_id("e9");
  CHECK(outcome(tier.call<shim::pb::Empty>("CloseIO", close)) ==
        "NotFound: process does not exist e9: not found");
  REQUIRE(tier.exec("c1", "e1").status.ok());
  close.set_exec_id("e1");
  CHECK(outcome(tier.call<shim::pb::Empty>("CloseIO", close)) == "OK");  // no stdin, no stdio yet
}

// ---- ResizePty --------------------------------------------------------------------------

TEST_CASE("tier ResizePty: no console succeeds, a stopped exec refuses with Go's text", "[tier]") {
  Tier tier;
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  auto resize = [&](const std::string& exec_id) {
    task::ResizePtyRequest request;
    request.set_id("c1");
    request.set_exec_id(exec_id);
    request.set_width(80);
    request.set_height(24);
    return outcome(tier.call<shim::pb::Empty>("ResizePty", request));
  };
  CHECK(resize("") == "OK");
  CHECK(resize("e1") == "OK");
  exit_recorded(tier, 4101, 0, "c1", "e1");
  CHECK(resize("e1") == "Unknown: cannot resize a stopped container");
  CHECK(resize("e9") == "NotFound: process does not exist e9: not found");
  exit_recorded(tier, 4002, 0, "c1");
  CHECK(resize("") == "OK");  // Go's Init.Resize: no console, nothing to do
}
