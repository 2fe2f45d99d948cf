// The process tier's task service, rule by rule: Kill, Pause, Resume, Update and
// Checkpoint, with the code and text containerd gets (the Go runc shim's), over a scripted
// runtime. Signals through pidfds go to real children of the test, never to made-up pids.
#include <signal.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "unit/task/tier_rules.h"

using namespace tier_rules;

namespace {

CallResult update(Tier& tier, const std::string& id, const std::string& resources) {
  task::UpdateTaskRequest request;
  request.set_id(id);
  request.mutable_resources()->set_value(resources);
  return tier.call<shim::pb::Empty>("Update", request);
}

task::CheckpointTaskRequest checkpoint_request(const std::string& id, const std::string& path) {
  task::CheckpointTaskRequest request;
  request.set_id(id);
  request.set_path(path);
  return request;
}

}  // namespace

// ---- Kill -------------------------------------------------------------------------------

TEST_CASE("tier Kill of init: through the Instance, in every state, its error as it is", "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  CHECK(outcome(tier.kill("c1", 15)) == "OK");  // a created init too (Go: runc kill)
  REQUIRE(tier.start("c1").status.ok());
  CHECK(outcome(tier.kill("c1", 9, true)) == "OK");
  exit_recorded(tier, 4002, 137, "c1");
  CHECK(outcome(tier.kill("c1", 15)) == "OK");  // stopped: runc decides ("not running")
  CHECK(tier.script.recorded() ==
        std::vector<std::string>{"create", "kill 15", "start", "kill 9 all", "kill 15"});
  tier.script.fails["kill"] = shim::not_found("process already finished");
  CHECK(outcome(tier.kill("c1", 15)) == "NotFound: process already finished: not found");
  CHECK(outcome(tier.kill("c9", 15)) == "NotFound: container not created: not found");
}

TEST_CASE("tier Kill of init waits for a Start under way (one container call at a time)",
          "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  tier.script.hold("start");
  task::StartRequest start;
  start.set_id("c1");
  auto starting = tier.call_async("Start", start);
  REQUIRE(tier.script.wait_until_held("start"));
  task::KillRequest kill;
  kill.set_id("c1");
  kill.set_signal(9);
  auto killing = tier.call_async("Kill", kill);
  CHECK(tier.state("c1") == types::CREATED);  // a sync point: Kill was handled before
  CHECK_FALSE(answered(killing));
  tier.script.release("start");
  CHECK(outcome(starting.get()) == "OK");
  CHECK(outcome(killing.get()) == "OK");
  CHECK(tier.script.recorded() == std::vector<std::string>{"create", "start", "kill 9"});
}

TEST_CASE("tier Kill of an exec: through its pidfd, not created or finished refused", "[tier]") {
  Tier tier;
  run(tier, "c1");
  SleepingChild exec;
  REQUIRE(tier.exec("c1", "e1").status.ok());
  CHECK(outcome(tier.kill("c1", 15, false, "e1")) ==
        "FailedPrecondition: process not created: failed precondition");
  script_pid(tier, "e1", exec.pid());
  REQUIRE(tier.start("c1", "e1").status.ok());
  CHECK(outcome(tier.kill("c1", 15, false, "e1")) == "OK");
  CHECK(exec.ended_by() == SIGTERM);
  // No runtime call: Go signals execs itself.
  CHECK(tier.script.recorded() == std::vector<std::string>{"create", "start", "exec e1"});
  exit_recorded(tier, static_cast<int>(exec.pid()), 143, "c1", "e1");
  CHECK(outcome(tier.kill("c1", 15, false, "e1")) ==
        "NotFound: process already finished: not found");
  CHECK(outcome(tier.kill("c1", 15, false, "e9")) ==
        "NotFound: process does not exist e9: not found");
}

TEST_CASE("tier Kill without the runtime's kill: the init through its pidfd", "[tier]") {
  Tier tier;
  tier.script.kill_override = false;
  SleepingChild init;
  script_pid(tier, "c1", init.pid());
  run(tier, "c1");
  SECTION("a signal") { CHECK(outcome(tier.kill("c1", 15)) == "OK"); }
  SECTION("all, in a container with its own pid namespace: the init takes the rest with it") {
    CHECK(outcome(tier.kill("c1", 15, true)) == "OK");
  }
  CHECK(init.ended_by() == SIGTERM);
  // Once reaped, the pidfd refuses: Go's checkKillError text.
  exit_recorded(tier, static_cast<int>(init.pid()), 143, "c1");
  CHECK(outcome(tier.kill("c1", 9)) == "NotFound: process already finished: not found");
}

TEST_CASE("tier Kill without the runtime's kill: `all` needs a private pid namespace", "[tier]") {
  Tier tier;
  tier.script.kill_override = false;
  SleepingChild init;
  script_pid(tier, "c1", init.pid());
  run(tier, "c1", kSharedPidSpec);
  CHECK(
      outcome(tier.kill("c1", 9, true)) ==
      "FailedPrecondition: killing all processes needs the runtime's support: failed precondition");
  // Nothing was sent: the SIGTERM that follows is what ends it, not a SIGKILL.
  CHECK(outcome(tier.kill("c1", 15)) == "OK");
  CHECK(init.ended_by() == SIGTERM);
}

// ---- Pause, Resume ----------------------------------------------------------------------

TEST_CASE("tier Pause: only a running container, PAUSING meanwhile, /tasks/paused", "[tier]") {
  Tier tier;
  tier.script.pause_resume = true;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  CHECK(outcome(tier.pause("c1")) == "Unknown: cannot pause task in created state");
  REQUIRE(tier.start("c1").status.ok());
  tier.script.hold("pause");
  task::PauseRequest pause;
  pause.set_id("c1");
  auto pausing = tier.call_async("Pause", pause);
  REQUIRE(tier.script.wait_until_held("pause"));
  CHECK(tier.state("c1") == types::PAUSING);
  CHECK(outcome(tier.pause("c1")) == "Unknown: cannot pause a paused container");
  CHECK(outcome(tier.resume("c1")) == "Unknown: cannot resume a running process");
  tier.script.release("pause");
  CHECK(outcome(pausing.get()) == "OK");
  CHECK(tier.state("c1") == types::PAUSED);
  CHECK(outcome(tier.pause("c1")) == "Unknown: cannot pause a paused container");
  exit_recorded(tier, 4002, 137, "c1");
  CHECK(outcome(tier.pause("c1")) == "Unknown: cannot pause a stopped container");
  CHECK(outcome(tier.resume("c1")) == "Unknown: cannot resume a stopped container");
  CHECK(outcome(tier.pause("c9")) == "NotFound: container not created: not found");
  CHECK(tier.script.recorded() == std::vector<std::string>{"create", "start", "pause"});
  REQUIRE(tier.wait_published("/tasks/exit"));  // it follows the stop (output settled)
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/start",
                                                     "/tasks/paused", "/tasks/exit c1"});
}

TEST_CASE("tier Pause: a failed pause leaves the container running, without /tasks/paused",
          "[tier]") {
  Tier tier;
  SECTION("the runtime's error") {
    tier.script.pause_resume = true;
    tier.script.fails["pause"] = shim::unknown("runc pause: freezer not found");
    run(tier, "c1");
    CHECK(outcome(tier.pause("c1")) == "Unknown: runc pause: freezer not found");
  }
  SECTION("no pause in the runtime") {
    run(tier, "c1");
    CHECK(outcome(tier.pause("c1")) == "Unimplemented: pause: not implemented");
  }
  CHECK(tier.state("c1") == types::RUNNING);
  CHECK(outcome(tier.resume("c1")) == "Unknown: cannot resume a running process");
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/start"});
}

TEST_CASE("tier Resume: only a paused container, a failed resume leaves it paused", "[tier]") {
  Tier tier;
  tier.script.pause_resume = true;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  CHECK(outcome(tier.resume("c1")) == "Unknown: cannot resume task in created state");
  REQUIRE(tier.start("c1").status.ok());
  CHECK(outcome(tier.resume("c1")) == "Unknown: cannot resume a running process");
  REQUIRE(tier.pause("c1").status.ok());
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.fails["resume"] = shim::unknown("runc resume failed");
  }
  CHECK(outcome(tier.resume("c1")) == "Unknown: runc resume failed");
  CHECK(tier.state("c1") == types::PAUSED);
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.fails.clear();
  }
  CHECK(outcome(tier.resume("c1")) == "OK");
  CHECK(tier.state("c1") == types::RUNNING);
  CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/start",
                                                     "/tasks/paused", "/tasks/resumed"});
}

// ---- Update -----------------------------------------------------------------------------

TEST_CASE("tier Update: any state but stopped, Go's JSON syntax errors before the runtime runs",
          "[tier]") {
  Tier tier;
  tier.script.implemented = {"update"};
  tier.script.pause_resume = true;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  CHECK(outcome(update(tier, "c1", R"({"pids":{"limit":10}})")) == "OK");  // created too
  REQUIRE(tier.start("c1").status.ok());
  CHECK(outcome(update(tier, "c1", R"({"cpu":{"shares":512}})")) == "OK");
  REQUIRE(tier.pause("c1").status.ok());
  CHECK(outcome(update(tier, "c1", "{}")) == "OK");
  REQUIRE(tier.resume("c1").status.ok());
  CHECK(outcome(update(tier, "c1", R"({"cpu":)")) == "Unknown: unexpected end of JSON input");
  CHECK(outcome(update(tier, "c1", R"({"memory":})")) ==
        "Unknown: invalid character '}' looking for beginning of value");
  // Go's scanner steps a space at the end of the input: not "unexpected end" here.
  CHECK(outcome(update(tier, "c1", "nul")) ==
        "Unknown: invalid character ' ' in literal null (expecting 'l')");
  exit_recorded(tier, 4002, 0, "c1");
  CHECK(outcome(update(tier, "c1", "{}")) == "Unknown: cannot update a stopped container");
  CHECK(outcome(update(tier, "c9", "{}")) == "NotFound: container not created: not found");
  CHECK(tier.script.recorded() ==
        std::vector<std::string>{"create", R"(update {"pids":{"limit":10}})", "start",
                                 R"(update {"cpu":{"shares":512}})", "pause", "update {}",
                                 "resume"});
}

TEST_CASE("tier Update: a runtime without update is Unimplemented", "[tier]") {
  Tier tier;
  run(tier, "c1");
  CHECK(outcome(update(tier, "c1", "{}")) == "Unimplemented: update: not implemented");
}

// ---- Checkpoint -------------------------------------------------------------------------

TEST_CASE("tier Checkpoint: running, pausing or paused, created and stopped refused", "[tier]") {
  Tier tier;
  tier.script.implemented = {"checkpoint"};
  tier.script.pause_resume = true;
  const std::string image = tier.dir.sub("image");
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  CHECK(outcome(tier.call<shim::pb::Empty>("Checkpoint", checkpoint_request("c1", image))) ==
        "Unknown: cannot checkpoint a task in created state");
  REQUIRE(tier.start("c1").status.ok());
  CHECK(outcome(tier.call<shim::pb::Empty>("Checkpoint", checkpoint_request("c1", image))) == "OK");
  // Go's Checkpoint waits for a pause under way, then checkpoints the paused container.
  tier.script.hold("pause");
  task::PauseRequest pause;
  pause.set_id("c1");
  auto pausing = tier.call_async("Pause", pause);
  REQUIRE(tier.script.wait_until_held("pause"));
  auto checkpointing = tier.call_async("Checkpoint", checkpoint_request("c1", image + "2"));
  CHECK(tier.state("c1") == types::PAUSING);  // a sync point: Checkpoint was handled before
  CHECK_FALSE(answered(checkpointing));
  tier.script.release("pause");
  CHECK(outcome(pausing.get()) == "OK");
  CHECK(outcome(checkpointing.get()) == "OK");
  exit_recorded(tier, 4002, 0, "c1");
  CHECK(outcome(tier.call<shim::pb::Empty>("Checkpoint", checkpoint_request("c1", image))) ==
        "Unknown: cannot checkpoint a stopped container");
  CHECK(tier.script.recorded() == std::vector<std::string>{"create", "start", "checkpoint " + image,
                                                           "pause", "checkpoint " + image + "2"});
}
