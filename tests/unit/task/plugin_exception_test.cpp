// A plug-in whose code throws: every Runtime and Instance method, in turn. The call fails
// with an error naming the method, what it began is undone, the container's queue moves
// on, and nothing is left that keeps the shim alive (shim/runtime.h, "Exceptions").
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "shim/status.h"
#include "unit/task/scripted_tier.h"

namespace {

namespace task = containerd::task::v2;
namespace types = containerd::v1::types;
using shim::Code;
using shim::test::kPrivatePidSpec;
using shim::test::Tier;

bool logged(Tier& tier, const std::string& method) {
  std::lock_guard lock(tier.log_mu);
  for (const auto& line : tier.log_lines) {
    if (line.find("msg=\"plug-in code threw\"") != std::string::npos &&
        line.find("method=\"" + method + "\"") != std::string::npos) {
      return true;
    }
  }
  return false;
}

void check_thrown(const shim::test::CallResult& result, const std::string& method) {
  CHECK(result.status.code() == Code::kInternal);
  CHECK(result.status.message() == fmt::format("Instance::{} threw: boom in {}", method, method));
}

}  // namespace

TEST_CASE(
    "plug-in exceptions: a throwing Runtime::open fails Create, and the id can be created again",
    "[tier][plugin-exception]") {
  Tier tier;
  tier.script.throws = {"open"};
  auto refused = tier.create("c1", kPrivatePidSpec);
  CHECK(refused.status.code() == Code::kInternal);
  CHECK(refused.status.message() == "Runtime::open threw: boom in open");
  CHECK(logged(tier, "Runtime::open"));
  CHECK(tier.publisher.topics().empty());
  CHECK(tier.start("c1").status.message() == "container not created: not found");
  // Nothing keeps the shim alive: Shutdown ends it.
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 1);
  tier.script.stop_throwing("open");
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
}

TEST_CASE("plug-in exceptions: a throwing create or stdio_owner fails Create, and a retry works",
          "[tier][plugin-exception]") {
  const std::string method = GENERATE("create", "stdio_owner");
  Tier tier;
  tier.script.throws = {method};
  check_thrown(tier.create("c1", kPrivatePidSpec), method);
  CHECK(logged(tier, "Instance::" + method));
  CHECK(tier.publisher.topics().empty());
  tier.script.stop_throwing(method);
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  CHECK(tier.publisher.topics() == std::vector<std::string>{"/tasks/create", "/tasks/start"});
}

TEST_CASE("plug-in exceptions: a throwing start leaves the task created, and Start can be retried",
          "[tier][plugin-exception]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  tier.script.throws = {"start"};
  check_thrown(tier.start("c1"), "start");
  CHECK(tier.state("c1") == types::CREATED);
  tier.script.stop_throwing("start");
  REQUIRE(tier.start("c1").status.ok());
  CHECK(tier.state("c1") == types::RUNNING);
  CHECK(tier.publisher.topics() == std::vector<std::string>{"/tasks/create", "/tasks/start"});
}

// The case: a PAUSING task stayed PAUSING for good and kill hung behind it.
TEST_CASE(
    "plug-in exceptions: a throwing pause leaves the task running, and kill and delete follow",
    "[tier][plugin-exception]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  tier.script.throws = {"pause"};
  check_thrown(tier.pause("c1"), "pause");
  CHECK(tier.state("c1") == types::RUNNING);
  REQUIRE(tier.kill("c1", 9).status.ok());
  CHECK(tier.script.wait_for_call("kill 9"));
  tier.reaper.exit(4002, 137);
  for (int i = 0; i < 200 && !tier.published("/tasks/exit"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(tier.remove("c1").status.ok());
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 1);
  CHECK(tier.publisher.topics() ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"});
}

TEST_CASE("plug-in exceptions: a throwing resume leaves the task paused, and a retry resumes it",
          "[tier][plugin-exception]") {
  Tier tier;
  tier.script.pause_resume = true;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  REQUIRE(tier.pause("c1").status.ok());
  tier.script.throws = {"resume"};
  check_thrown(tier.resume("c1"), "resume");
  CHECK(tier.state("c1") == types::PAUSED);
  tier.script.stop_throwing("resume");
  REQUIRE(tier.resume("c1").status.ok());
  CHECK(tier.state("c1") == types::RUNNING);
}

TEST_CASE("plug-in exceptions: kill, update, checkpoint, stats and pids fail alone",
          "[tier][plugin-exception]") {
  const std::string method = GENERATE("kill", "update", "checkpoint", "stats", "pids");
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  tier.script.throws = {method};
  shim::test::CallResult result;
  if (method == "kill") {
    result = tier.kill("c1", 15);
  } else if (method == "update") {
    task::UpdateTaskRequest request;
    request.set_id("c1");
    request.mutable_resources()->set_value("{}");
    result = tier.call<shim::pb::Empty>("Update", request);
  } else if (method == "checkpoint") {
    task::CheckpointTaskRequest request;
    request.set_id("c1");
    request.set_path(tier.dir.sub("image"));
    result = tier.call<shim::pb::Empty>("Checkpoint", request);
  } else if (method == "stats") {
    task::StatsRequest request;
    request.set_id("c1");
    result = tier.call<task::StatsResponse>("Stats", request);
  } else {
    task::PidsRequest request;
    request.set_id("c1");
    result = tier.call<task::PidsResponse>("Pids", request);
  }
  check_thrown(result, method);
  CHECK(logged(tier, "Instance::" + method));
  // The queue moved on: the next changing call runs.
  tier.script.stop_throwing(method);
  REQUIRE(tier.kill("c1", 9).status.ok());
  CHECK(tier.state("c1") == types::RUNNING);
}

TEST_CASE("plug-in exceptions: a throwing exec fails its Start, the exec can be deleted",
          "[tier][plugin-exception]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  REQUIRE(tier.exec("c1", "e1").status.ok());
  tier.script.throws = {"exec"};
  check_thrown(tier.start("c1", "e1"), "exec");
  CHECK(tier.state("c1", "e1") == types::CREATED);
  REQUIRE(tier.remove("c1", "e1").status.ok());
  CHECK(tier.state("c1") == types::RUNNING);
}

TEST_CASE("plug-in exceptions: a throwing delete_exec is logged, the Delete succeeds",
          "[tier][plugin-exception]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  REQUIRE(tier.exec("c1", "e1").status.ok());
  tier.script.throws = {"delete_exec"};
  REQUIRE(tier.remove("c1", "e1").status.ok());
  REQUIRE(tier.script.wait_for_call("delete_exec e1"));
  for (int i = 0; i < 200 && !logged(tier, "Instance::delete_exec"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(logged(tier, "Instance::delete_exec"));
}

TEST_CASE(
    "plug-in exceptions: a throwing remove fails Delete, a retry deletes and the shim can end",
    "[tier][plugin-exception]") {
  Tier tier;
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  tier.reaper.exit(4002, 0);
  for (int i = 0; i < 200 && !tier.published("/tasks/exit"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  tier.script.throws = {"remove"};
  check_thrown(tier.remove("c1"), "remove");
  CHECK(tier.state("c1") == types::STOPPED);
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 0);  // the container is still there
  tier.script.stop_throwing("remove");
  REQUIRE(tier.remove("c1").status.ok());
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 1);
}

TEST_CASE("plug-in exceptions: a StatusError keeps its status", "[tier][plugin-exception]") {
  struct StatusThrowingRuntime final : shim::Runtime {
    shim::Status open(const shim::ContainerConfig&, std::unique_ptr<shim::Instance>*) override {
      throw shim::StatusError(shim::failed_precondition("no room for it"));
    }
  };
  Tier tier(std::make_unique<StatusThrowingRuntime>());
  auto refused = tier.create("c1", kPrivatePidSpec);
  CHECK(refused.status.code() == Code::kFailedPrecondition);
  CHECK(refused.status.message() == "no room for it: failed precondition");
}
