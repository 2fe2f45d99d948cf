// The process tier's event ordering (shim/events/lifecycle_events.h, docs/architecture.md
// "Event ordering"), rule by rule, as containerd sees it: a scripted runtime, exits
// injected through the fake reaper, the events recorded per container. Where a rule holds
// an event back, exit_barrier() proves it would have been out by then if not held.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "unit/task/tier_rules.h"

using namespace tier_rules;

namespace {

using Trail = std::vector<std::string>;

bool trail_is(Tier& tier, const std::string& id, const Trail& expected) {
  return shim::test::eventually([&] { return tier.trail(id) == expected; });
}

}  // namespace

TEST_CASE("tier events: TaskCreate with the init's pid, then TaskStart", "[tier]") {
  Tier tier;
  run(tier, "c1");
  auto events = tier.publisher.events();
  REQUIRE(events.size() == 2);
  containerd::events::TaskCreate create;
  REQUIRE(create.ParseFromString(events[0].bytes));
  containerd::events::TaskStart start;
  REQUIRE(start.ParseFromString(events[1].bytes));
  CHECK(events[0].topic == "/tasks/create");
  CHECK(create.pid() == 4002);
  CHECK(events[1].topic == "/tasks/start");
  CHECK(start.container_id() == "c1");
  CHECK(start.pid() == 4002);
}

TEST_CASE("tier events: an init that exits while its Start is under way: TaskStart, then TaskExit",
          "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  tier.script.hold("start c1");
  task::StartRequest start;
  start.set_id("c1");
  auto starting = tier.call_async("Start", start);
  REQUIRE(tier.script.wait_until_held("start c1"));
  tier.reaper.exit(4002, 1);
  exit_barrier(tier);
  CHECK(tier.trail("c1") == Trail{"/tasks/create"});
  tier.script.release("start c1");
  CHECK(outcome(starting.get()) == "OK");
  CHECK(trail_is(tier, "c1", {"/tasks/create", "/tasks/start", "/tasks/exit c1"}));
  auto state = state_of(tier, "c1");
  CHECK(state.status() == types::STOPPED);
  CHECK(state.exit_status() == 1);
}

// The exec's pid is known only when exec() returns: its exit comes as an unknown pid's
// and is kept until then.
TEST_CASE(
    "tier events: an exec that exits while its Start is under way: TaskExecStarted, then TaskExit",
    "[tier]") {
  Tier tier;
  run(tier, "c1");
  script_pid(tier, "e1", 4101);
  REQUIRE(tier.exec("c1", "e1").status.ok());
  tier.script.hold("exec c1");
  task::StartRequest start;
  start.set_id("c1");
  start.set_exec_id("e1");
  auto starting = tier.call_async("Start", start);
  REQUIRE(tier.script.wait_until_held("exec c1"));
  tier.reaper.exit(4101, 2);
  exit_barrier(tier);
  CHECK(tier.trail("c1") == Trail{"/tasks/create", "/tasks/start", "/tasks/exec-added e1"});
  tier.script.release("exec c1");
  CHECK(outcome(starting.get()) == "OK");
  CHECK(trail_is(tier, "c1",
                 {"/tasks/create", "/tasks/start", "/tasks/exec-added e1", "/tasks/exec-started e1",
                  "/tasks/exit e1"}));
  CHECK(state_of(tier, "c1", "e1").exit_status() == 2);
}

TEST_CASE(
    "tier events: exec-added at Exec, exec-started with its pid at Start, none for a failed start",
    "[tier]") {
  Tier tier;
  run(tier, "c1");
  REQUIRE(tier.exec("c1", "e1").status.ok());
  CHECK(tier.trail("c1") == Trail{"/tasks/create", "/tasks/start", "/tasks/exec-added e1"});
  script_pid(tier, "e1", 4101);
  REQUIRE(tier.start("c1", "e1").status.ok());
  auto events = tier.publisher.events();
  containerd::events::TaskExecStarted started;
  REQUIRE(started.ParseFromString(events.back().bytes));
  CHECK(events.back().topic == "/tasks/exec-started");
  CHECK(started.exec_id() == "e1");
  CHECK(started.pid() == 4101);
  REQUIRE(tier.exec("c1", "e2").status.ok());
  tier.script.fails["exec"] = shim::unknown("OCI runtime exec failed");
  CHECK(outcome(tier.start("c1", "e2")) == "Unknown: OCI runtime exec failed");
  // The failed exec holds nothing: the init's exit goes out after e1's alone.
  tier.reaper.exit(4101, 0);
  tier.reaper.exit(4002, 0);
  CHECK(trail_is(tier, "c1",
                 {"/tasks/create", "/tasks/start", "/tasks/exec-added e1", "/tasks/exec-started e1",
                  "/tasks/exec-added e2", "/tasks/exit e1", "/tasks/exit c1"}));
}

TEST_CASE("tier events: an init's TaskExit waits until every started exec exited", "[tier]") {
  Tier tier;
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  run_exec(tier, "c1", "e2", 4102);
  REQUIRE(tier.exec("c1", "e3").status.ok());  // added, never started: holds nothing
  const Trail started{"/tasks/create",          "/tasks/start",         "/tasks/exec-added e1",
                      "/tasks/exec-started e1", "/tasks/exec-added e2", "/tasks/exec-started e2",
                      "/tasks/exec-added e3"};
  exit_recorded(tier, 4002, 137, "c1");
  exit_barrier(tier);
  CHECK(tier.trail("c1") == started);
  tier.reaper.exit(4102, 137);
  Trail expected = started;
  expected.push_back("/tasks/exit e2");
  CHECK(trail_is(tier, "c1", expected));
  exit_barrier(tier);
  CHECK(tier.trail("c1") == expected);  // e1 still runs
  tier.reaper.exit(4101, 137);
  expected.push_back("/tasks/exit e1");
  expected.push_back("/tasks/exit c1");
  CHECK(trail_is(tier, "c1", expected));
}

TEST_CASE("tier events: an exec starting when its init exits holds the init's TaskExit too",
          "[tier]") {
  Tier tier;
  run(tier, "c1");
  script_pid(tier, "e1", 4101);
  REQUIRE(tier.exec("c1", "e1").status.ok());
  tier.script.hold("exec c1");
  task::StartRequest start;
  start.set_id("c1");
  start.set_exec_id("e1");
  auto starting = tier.call_async("Start", start);
  REQUIRE(tier.script.wait_until_held("exec c1"));
  exit_recorded(tier, 4002, 137, "c1");
  tier.script.release("exec c1");
  CHECK(outcome(starting.get()) == "OK");  // Go: the exec was counted before the exit
  exit_barrier(tier);
  CHECK(tier.trail("c1") ==
        Trail{"/tasks/create", "/tasks/start", "/tasks/exec-added e1", "/tasks/exec-started e1"});
  tier.reaper.exit(4101, 137);
  CHECK(trail_is(tier, "c1",
                 {"/tasks/create", "/tasks/start", "/tasks/exec-added e1", "/tasks/exec-started e1",
                  "/tasks/exit e1", "/tasks/exit c1"}));
}

TEST_CASE("tier events: TaskDelete after TaskExit, with the exit's pid, status and time",
          "[tier]") {
  Tier tier;
  run(tier, "c1");
  tier.reaper.exit(4002, 3);
  REQUIRE(tier.wait_published("/tasks/exit"));
  REQUIRE(tier.remove("c1").status.ok());
  CHECK(tier.trail("c1") ==
        Trail{"/tasks/create", "/tasks/start", "/tasks/exit c1", "/tasks/delete"});
  auto events = tier.publisher.events();
  containerd::events::TaskExit exit;
  REQUIRE(exit.ParseFromString(events[2].bytes));
  containerd::events::TaskDelete deleted;
  REQUIRE(deleted.ParseFromString(events[3].bytes));
  CHECK(deleted.pid() == 4002);
  CHECK(deleted.exit_status() == 3);
  CHECK(deleted.exited_at().seconds() == exit.exited_at().seconds());
  CHECK(deleted.exited_at().nanos() == exit.exited_at().nanos());
}

// State says stopped as soon as the init is reaped, so containerd may Delete while its
// TaskExit still waits for the execs: the Delete waits too, and /tasks/delete follows.
TEST_CASE("tier events: a Delete while the init's TaskExit waits for an exec comes after it",
          "[tier]") {
  Tier tier;
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  exit_recorded(tier, 4002, 137, "c1");
  auto deleting = tier.call_async("Delete", delete_request("c1"));
  exit_barrier(tier);
  CHECK_FALSE(answered(deleting));
  CHECK(tier.trail("c1") ==
        Trail{"/tasks/create", "/tasks/start", "/tasks/exec-added e1", "/tasks/exec-started e1"});
  tier.reaper.exit(4101, 137);
  CallResult deleted = deleting.get();
  REQUIRE(outcome(deleted) == "OK");
  task::DeleteResponse response;
  REQUIRE(response.ParseFromString(deleted.payload));
  CHECK(response.exit_status() == 137);
  CHECK(tier.trail("c1") == Trail{"/tasks/create", "/tasks/start", "/tasks/exec-added e1",
                                  "/tasks/exec-started e1", "/tasks/exit e1", "/tasks/exit c1",
                                  "/tasks/delete"});
}

// The kill of the rest of a container without its own pid namespace comes before its
// init's TaskExit; a Delete meanwhile waits for both, in order.
TEST_CASE("tier events: a Delete while the TaskExit waits for the kill of the rest comes after it",
          "[tier]") {
  Tier tier;
  run(tier, "c1", kSharedPidSpec);
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.hold_kill = true;
  }
  exit_recorded(tier, 4002, 0, "c1");
  auto deleting = tier.call_async("Delete", delete_request("c1"));
  exit_barrier(tier);
  CHECK_FALSE(answered(deleting));
  CHECK(tier.trail("c1") == Trail{"/tasks/create", "/tasks/start"});
  tier.script.release_kill();
  CHECK(outcome(deleting.get()) == "OK");
  CHECK(tier.trail("c1") ==
        Trail{"/tasks/create", "/tasks/start", "/tasks/exit c1", "/tasks/delete"});
  CHECK(tier.script.recorded() ==
        std::vector<std::string>{"create", "start", "create", "start", "kill 9 all", "remove"});
}

TEST_CASE("tier events: one container's held calls and events do not hold another's", "[tier]") {
  Tier tier;
  std::future<CallResult> starting;
  SECTION("a TaskExit waiting for the kill of the rest") {
    run(tier, "c1", kSharedPidSpec);
    {
      std::lock_guard lock(tier.script.mu);
      tier.script.hold_kill = true;
    }
    exit_recorded(tier, 4002, 0, "c1");
  }
  SECTION("a Start under way") {
    REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
    tier.script.hold("start c1");
    task::StartRequest start;
    start.set_id("c1");
    starting = tier.call_async("Start", start);
    REQUIRE(tier.script.wait_until_held("start c1"));
    tier.reaper.exit(4002, 0);
  }
  script_pid(tier, "c22", 4022);
  run(tier, "c22");
  run_exec(tier, "c22", "e1", 4122);
  tier.reaper.exit(4122, 0);
  tier.reaper.exit(4022, 0);
  REQUIRE(trail_is(tier, "c22",
                   {"/tasks/create", "/tasks/start", "/tasks/exec-added e1",
                    "/tasks/exec-started e1", "/tasks/exit e1", "/tasks/exit c22"}));
  REQUIRE(tier.remove("c22").status.ok());
  CHECK(tier.trail("c22").back() == "/tasks/delete");
  CHECK(tier.trail("c1").size() <= 2);  // c1 still waits: no exit of it went out
  CHECK(tier.trail("c1").back() != "/tasks/exit c1");
  // Then c1 goes on.
  tier.script.release_all();
  if (starting.valid()) CHECK(outcome(starting.get()) == "OK");
  CHECK(trail_is(tier, "c1", {"/tasks/create", "/tasks/start", "/tasks/exit c1"}));
}

// The Delete above waits for the held TaskExit at most 2 s (kIoDrainTimeout). An exec
// that outlives its init longer (a container without its own pid namespace whose runtime
// has no kill(), or whose kill of the rest failed) gets the Delete refused as Go refuses
// it (its init is running until its exit is handled): never /tasks/delete with no init
// TaskExit before it, never a Wait on the init dropped.
TEST_CASE("tier events: a Delete never publishes /tasks/delete without the init's TaskExit",
          "[tier]") {
  Tier tier;
  run(tier, "c1");
  run_exec(tier, "c1", "e1", 4101);
  exit_recorded(tier, 4002, 137, "c1");
  auto waiting = tier.call_async("Wait", wait_request("c1"));
  CallResult deleted = tier.call<task::DeleteResponse>("Delete", delete_request("c1"));
  tier.reaper.exit(4101, 137);
  exit_barrier(tier);
  const Trail trail = tier.trail("c1");
  INFO("Delete: " << outcome(deleted));
  auto exit = std::find(trail.begin(), trail.end(), "/tasks/exit c1");
  auto removed = std::find(trail.begin(), trail.end(), "/tasks/delete");
  CHECK(exit != trail.end());
  CHECK((removed == trail.end() || exit < removed));
  task::WaitResponse response;
  CallResult waited = waiting.get();
  INFO("Wait: " << outcome(waited));
  REQUIRE(response.ParseFromString(waited.payload));
  CHECK(waited.status.ok());
  CHECK(response.exit_status() == 137);
  CHECK(outcome(deleted) == "Unknown: cannot delete a running process");
  // Once the TaskExit went out the Delete goes through, and /tasks/delete follows it.
  REQUIRE(tier.remove("c1").status.ok());
  CHECK(tier.trail("c1").back() == "/tasks/delete");
}
