// The process tier's task service, rule by rule: Create, Start, Exec, Delete, Connect and
// Shutdown, with the code and text containerd gets (the Go runc shim's: task/service.go,
// runc/container.go, process/{init,exec}_state.go), over a scripted runtime.
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/timestamp.h"
#include "unit/task/tier_rules.h"

using namespace tier_rules;

namespace {

long count_of(const std::vector<std::string>& calls, const std::string& call) {
  return std::count(calls.begin(), calls.end(), call);
}

}  // namespace

// ---- Create -----------------------------------------------------------------------------

TEST_CASE("tier Create: an id that exists, or whose Create is under way, is AlreadyExists",
          "[tier]") {
  Tier tier;
  tier.script.hold("create");
  auto first = tier.call_async("Create", create_request(tier, "c1"));
  REQUIRE(tier.script.wait_until_held("create"));
  // Refused at once, without a second runtime call: the first still runs.
  CHECK(outcome(tier.create("c1", kPrivatePidSpec)) ==
        "AlreadyExists: container c1: already exists");
  tier.script.release("create");
  CHECK(outcome(first.get()) == "OK");
  CHECK(outcome(tier.create("c1", kPrivatePidSpec)) ==
        "AlreadyExists: container c1: already exists");
  CHECK(count_of(tier.script.recorded(), "create") == 1);
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create"});
}

TEST_CASE("tier Create: the runtime's refusal reaches containerd as it is and leaves nothing",
          "[tier]") {
  Tier tier;
  tier.script.fails["create"] = shim::unknown("OCI runtime create failed: no such file");
  CHECK(outcome(tier.create("c1", kPrivatePidSpec)) ==
        "Unknown: OCI runtime create failed: no such file");
  CHECK(tier.publisher.topics().empty());
  CHECK(outcome(tier.start("c1")) == "NotFound: container not created: not found");
  CHECK(outcome(state_call(tier, "c1")) == "NotFound: container not created: not found");
  // The id is free: the same Create works once the runtime does.
  tier.script.fails.clear();
  task::CreateTaskResponse created;
  REQUIRE(tier.call("Create", create_request(tier, "c1"), &created).status.ok());
  CHECK(created.pid() == 4002);
}

TEST_CASE(
    "tier Create: a bad io.libshim.output.* annotation is InvalidArgument naming it, "
    "before the runtime is asked",
    "[tier][output-buffer]") {
  Tier tier;
  const std::string spec =
      R"({"ociVersion":"1.0.2","annotations":{"io.libshim.output.overflow":"later"}})";
  CHECK(outcome(tier.create("c1", spec)) ==
        "InvalidArgument: annotation io.libshim.output.overflow: \"later\" is not block or drop");
  CHECK(count_of(tier.script.recorded(), "create") == 0);
  CHECK(tier.publisher.topics().empty());
  const std::string good =
      R"({"ociVersion":"1.0.2","annotations":{"io.libshim.output.overflow":"drop",)"
      R"("io.libshim.output.buffer-bytes":"64Ki","io.libshim.output.spill-bytes":"0"}})";
  CHECK(outcome(tier.create("c2", good)) == "OK");
}

TEST_CASE("tier Create: the response and TaskCreate carry the init's pid, bundle and stdio",
          "[tier]") {
  Tier tier;
  task::CreateTaskRequest request = create_request(tier, "c1");
  request.set_stdin("");
  request.set_stdout("");
  request.set_stderr("");
  task::CreateTaskResponse response;
  REQUIRE(tier.call("Create", request, &response).status.ok());
  CHECK(response.pid() == 4002);
  auto events = tier.publisher.events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].topic == "/tasks/create");
  containerd::events::TaskCreate event;
  REQUIRE(event.ParseFromString(events[0].bytes));
  CHECK(event.container_id() == "c1");
  CHECK(event.bundle() == request.bundle());
  CHECK(event.pid() == 4002);
  CHECK_FALSE(event.io().terminal());
  CHECK(event.checkpoint().empty());
  // Created, not started: State says so, with the pid create() reported.
  auto state = state_of(tier, "c1");
  CHECK(state.status() == types::CREATED);
  CHECK(state.pid() == 4002);
}

// ---- Start ------------------------------------------------------------------------------

TEST_CASE(
    "tier Start of init: created starts, a start under way, running, paused or stopped refuse",
    "[tier]") {
  Tier tier;
  tier.script.pause_resume = true;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  CHECK(outcome(tier.start("c9")) == "NotFound: container not created: not found");
  tier.script.hold("start");
  task::StartRequest start;
  start.set_id("c1");
  auto starting = tier.call_async("Start", start);
  REQUIRE(tier.script.wait_until_held("start"));
  // Go's Start holds the process lock, so a second one finds it running.
  CHECK(outcome(tier.start("c1")) == "Unknown: cannot start a running process");
  tier.script.release("start");
  CallResult started = starting.get();
  REQUIRE(outcome(started) == "OK");
  task::StartResponse response;
  REQUIRE(response.ParseFromString(started.payload));
  CHECK(response.pid() == 4002);
  CHECK(tier.state("c1") == types::RUNNING);
  CHECK(outcome(tier.start("c1")) == "Unknown: cannot start a running process");
  REQUIRE(tier.pause("c1").status.ok());
  CHECK(outcome(tier.start("c1")) == "Unknown: cannot start a paused process");
  REQUIRE(tier.resume("c1").status.ok());
  exit_recorded(tier, 4002, 0, "c1");
  CHECK(outcome(tier.start("c1")) == "Unknown: cannot start a stopped process");
  // The runtime ran start() once.
  CHECK(count_of(tier.script.recorded(), "start") == 1);
}

TEST_CASE("tier Start of init: the runtime's refusal as it is, the task stays created", "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  tier.script.fails["start"] = shim::unknown("OCI runtime start failed: exec: \"sh\": not found");
  CHECK(outcome(tier.start("c1")) == "Unknown: OCI runtime start failed: exec: \"sh\": not found");
  CHECK(tier.state("c1") == types::CREATED);
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create"});
  tier.script.fails.clear();
  CHECK(outcome(tier.start("c1")) == "OK");
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/start"});
}

TEST_CASE(
    "tier Start of an exec: created starts, running or stopped refuse, a stopped init refuses",
    "[tier]") {
  Tier tier;
  run(tier, "c1");
  REQUIRE(tier.exec("c1", "e1").status.ok());
  task::StartRequest start;
  start.set_id("c1");
  start.set_exec_id("e1");
  task::StartResponse response;
  REQUIRE(tier.call("Start", start, &response).status.ok());
  CHECK(response.pid() == 4003);
  CHECK(tier.state("c1", "e1") == types::RUNNING);
  CHECK(outcome(tier.start("c1", "e1")) == "Unknown: cannot start a running process");
  exit_recorded(tier, 4003, 0, "c1", "e1");
  CHECK(outcome(tier.start("c1", "e1")) == "Unknown: cannot start a stopped process");
  CHECK(outcome(tier.start("c1", "e9")) == "NotFound: process does not exist e9: not found");

  // An exec whose start is under way is running to a second Start (Go's exec lock).
  REQUIRE(tier.exec("c1", "e2").status.ok());
  tier.script.hold("exec");
  start.set_exec_id("e2");
  auto starting = tier.call_async("Start", start);
  REQUIRE(tier.script.wait_until_held("exec"));
  CHECK(outcome(tier.start("c1", "e2")) == "Unknown: cannot start a running process");
  tier.script.release("exec");
  CHECK(outcome(starting.get()) == "OK");

  // Once the init stopped, no exec starts (Go: containerInitExit), and nothing ran.
  REQUIRE(tier.exec("c1", "e3").status.ok());
  exit_recorded(tier, 4002, 0, "c1");
  CHECK(outcome(tier.start("c1", "e3")) ==
        "FailedPrecondition: container c1 init process is not running: failed precondition");
  CHECK(count_of(tier.script.recorded(), "exec e3") == 0);
  CHECK(tier.state("c1", "e3") == types::CREATED);
}

// ---- Exec -------------------------------------------------------------------------------

TEST_CASE("tier Exec: a duplicate exec id is AlreadyExists until that exec is deleted", "[tier]") {
  Tier tier;
  run(tier, "c1");
  REQUIRE(tier.exec("c1", "e1").status.ok());
  CHECK(outcome(tier.exec("c1", "e1")) == "AlreadyExists: id e1: already exists");
  REQUIRE(tier.start("c1", "e1").status.ok());
  CHECK(outcome(tier.exec("c1", "e1")) == "AlreadyExists: id e1: already exists");
  exit_recorded(tier, 4003, 0, "c1", "e1");
  CHECK(outcome(tier.exec("c1", "e1")) == "AlreadyExists: id e1: already exists");
  REQUIRE(tier.remove("c1", "e1").status.ok());
  CHECK(outcome(tier.exec("c1", "e1")) == "OK");
  CHECK(outcome(tier.exec("c9", "e1")) == "NotFound: container not created: not found");
}

TEST_CASE("tier Exec: the init's state decides, a created init takes execs", "[tier]") {
  Tier tier;
  tier.script.pause_resume = true;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  CHECK(outcome(tier.exec("c1", "e1")) == "OK");  // Go's createdState.Exec: runc allows it
  REQUIRE(tier.start("c1").status.ok());
  REQUIRE(tier.pause("c1").status.ok());
  CHECK(outcome(tier.exec("c1", "e2")) == "Unknown: cannot exec in a paused state");
  REQUIRE(tier.resume("c1").status.ok());
  exit_recorded(tier, 4002, 0, "c1");
  CHECK(outcome(tier.exec("c1", "e3")) == "Unknown: cannot exec in a stopped state");
  REQUIRE(tier.wait_published("/tasks/exit"));  // it follows the stop (output settled)
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/exec-added e1",
                                                     "/tasks/start", "/tasks/paused",
                                                     "/tasks/resumed", "/tasks/exit c1"});
}

TEST_CASE("tier Exec: a container created from a checkpoint takes no exec until restored",
          "[tier]") {
  Tier tier;
  task::CreateTaskRequest request = create_request(tier, "c1");
  request.set_checkpoint(tier.dir.sub("image"));
  REQUIRE(tier.call<task::CreateTaskResponse>("Create", request).status.ok());
  CHECK(outcome(tier.exec("c1", "e1")) == "Unknown: cannot exec in a created state");
  REQUIRE(tier.start("c1").status.ok());  // the restore
  CHECK(outcome(tier.exec("c1", "e1")) == "OK");
}

TEST_CASE(
    "tier Exec: a spec that is no OCI process object is InvalidArgument, and no exec is added",
    "[tier]") {
  Tier tier;
  run(tier, "c1");
  const char* bad = GENERATE(R"({"args":)", "[]", R"("sh")");
  CHECK(outcome(tier.call<shim::pb::Empty>("Exec", exec_request("c1", "e1", bad))) ==
        "InvalidArgument: exec spec is not an OCI process JSON object: invalid argument");
  CHECK(outcome(tier.call<shim::pb::Empty>(
            "Exec", exec_request("c1", "e1", R"({"args":["x"],"n":1e999})"))) ==
        "InvalidArgument: exec spec: the number at /n is out of range: invalid argument");
  CHECK(outcome(state_call(tier, "c1", "e1")) == "NotFound: process does not exist e1: not found");
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/start"});
  CHECK(outcome(tier.exec("c1", "e1")) == "OK");  // the id was not taken
}

// ---- Delete -----------------------------------------------------------------------------

TEST_CASE(
    "tier Delete of init: running or paused refused, after the exit its status and /tasks/delete",
    "[tier]") {
  Tier tier;
  tier.script.pause_resume = true;
  run(tier, "c1");
  CHECK(outcome(tier.remove("c1")) == "Unknown: cannot delete a running process");
  REQUIRE(tier.pause("c1").status.ok());
  CHECK(outcome(tier.remove("c1")) == "Unknown: cannot delete a paused process");
  REQUIRE(tier.resume("c1").status.ok());
  tier.reaper.exit(4002, 7);
  REQUIRE(tier.wait_published("/tasks/exit"));
  task::DeleteResponse deleted;
  REQUIRE(tier.call("Delete", delete_request("c1"), &deleted).status.ok());
  CHECK(deleted.pid() == 4002);
  CHECK(deleted.exit_status() == 7);
  auto events = tier.publisher.events();
  REQUIRE(events.back().topic == "/tasks/delete");
  containerd::events::TaskExit exit;
  REQUIRE(exit.ParseFromString(events[events.size() - 2].bytes));
  containerd::events::TaskDelete event;
  REQUIRE(event.ParseFromString(events.back().bytes));
  CHECK(event.container_id() == "c1");
  CHECK(event.pid() == 4002);
  CHECK(event.exit_status() == 7);
  CHECK(event.exited_at().seconds() == exit.exited_at().seconds());
  CHECK(event.exited_at().nanos() == exit.exited_at().nanos());
  CHECK(deleted.exited_at().seconds() == exit.exited_at().seconds());
  CHECK(deleted.exited_at().nanos() == exit.exited_at().nanos());
  CHECK(tier.script.recorded().back() == "remove");
  CHECK(outcome(state_call(tier, "c1")) == "NotFound: container not created: not found");
  CHECK(outcome(tier.remove("c1")) == "NotFound: container not created: not found");
}

TEST_CASE("tier Delete of a created init: removed, no exit status", "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  task::DeleteResponse deleted;
  REQUIRE(tier.call("Delete", delete_request("c1"), &deleted).status.ok());
  CHECK(deleted.pid() == 4002);
  CHECK(deleted.exit_status() == 0);
  CHECK(deleted.exited_at().seconds() == shim::kGoZeroTimeSeconds);  // Go's zero time
  CHECK(tier.script.recorded() == std::vector<std::string>{"create", "remove"});
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/delete"});
}

TEST_CASE("tier Delete of an exec: running refused, created or stopped deleted, without an event",
          "[tier]") {
  Tier tier;
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  CHECK(outcome(tier.remove("c1", "e1")) == "Unknown: cannot delete a running process");
  tier.reaper.exit(4101, 3);
  REQUIRE(tier.wait_published("/tasks/exit"));
  task::DeleteResponse deleted;
  REQUIRE(tier.call("Delete", delete_request("c1", "e1"), &deleted).status.ok());
  CHECK(deleted.pid() == 4101);
  CHECK(deleted.exit_status() == 3);
  CHECK(deleted.exited_at().seconds() > 0);
  CHECK(outcome(state_call(tier, "c1", "e1")) == "NotFound: process does not exist e1: not found");
  CHECK(tier.script.wait_for_call("delete_exec e1"));  // the runtime's clean-up, after the answer

  REQUIRE(tier.exec("c1", "e2").status.ok());  // never started
  REQUIRE(tier.call("Delete", delete_request("c1", "e2"), &deleted).status.ok());
  CHECK(deleted.pid() == 0);
  CHECK(deleted.exit_status() == 0);
  CHECK(outcome(tier.remove("c1", "e2")) == "NotFound: process does not exist e2: not found");
  // Go publishes /tasks/delete for the init only.
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/start",
                                                     "/tasks/exec-added e1",
                                                     "/tasks/exec-started e1", "/tasks/exit e1",
                                                     "/tasks/exec-added e2"});
  CHECK(tier.state("c1") == types::RUNNING);
}

// Go's second Delete waits for the first on the process lock, then finds the process
// deleted: NotFound "cannot delete a deleted process", which containerd's shim client and
// CRI ignore as already done.
TEST_CASE("tier Delete of init while another Delete of it is under way: NotFound, as in Go",
          "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  tier.script.hold("remove");
  auto first = tier.call_async("Delete", delete_request("c1"));
  REQUIRE(tier.script.wait_until_held("remove"));
  auto second = tier.call_async("Delete", delete_request("c1"));
  CHECK(tier.state("c1") == types::CREATED);  // a sync point: the second Delete was handled
  tier.script.release("remove");
  CHECK(outcome(first.get()) == "OK");
  CHECK(second.get().status.code() == shim::Code::kNotFound);
}

// ---- Connect, Shutdown ------------------------------------------------------------------

TEST_CASE("tier Connect: the shim's pid, and the task's pid when the container exists", "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  task::ConnectRequest request;
  request.set_id("c1");
  task::ConnectResponse response;
  REQUIRE(tier.call("Connect", request, &response).status.ok());
  CHECK(response.shim_pid() == static_cast<std::uint32_t>(::getpid()));
  CHECK(response.task_pid() == 4002);
  request.set_id("c9");
  REQUIRE(tier.call("Connect", request, &response).status.ok());
  CHECK(response.shim_pid() == static_cast<std::uint32_t>(::getpid()));
  CHECK(response.task_pid() == 0);
}

TEST_CASE("tier Shutdown: the shim ends only without containers and Creates under way", "[tier]") {
  Tier tier;
  tier.script.hold("create");
  tier.script.fails["create"] = shim::unknown("OCI runtime create failed");
  auto creating = tier.call_async("Create", create_request(tier, "c1"));
  REQUIRE(tier.script.wait_until_held("create"));
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 0);  // the Create under way may still succeed
  tier.script.release("create");
  CHECK(outcome(creating.get()) == "Unknown: OCI runtime create failed");

  tier.script.fails.clear();
  REQUIRE(tier.create("c2", kPrivatePidSpec).status.ok());
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 0);
  REQUIRE(tier.remove("c2").status.ok());
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 1);
}
