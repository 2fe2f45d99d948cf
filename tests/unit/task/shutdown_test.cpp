// Shutdown's one rule (shim/shutdown_control.h): containerd sends Shutdown after every
// task delete, sandboxed tasks (task API v3) included from 2.4 on (containerd #13958),
// so a shim serving several containers ends only once none is left, a Create under way
// counts as one, and another service's keeper (a live sandbox) keeps it too.
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "task/runtime_task_service.h"
#include "unit/task/scripted_tier.h"

namespace {

using namespace std::chrono_literals;
namespace task = containerd::task::v2;
namespace types = containerd::v1::types;

using shim::test::CountingShutdown;
using shim::test::kPrivatePidSpec;
using shim::test::Tier;

// The ScriptedRuntime's init pid for `id` (scripted_tier.h).
int pid_of(const std::string& id) { return 4000 + static_cast<int>(id.size()); }

// Create, start, exit 0, wait until State says stopped.
void run_to_exit(Tier& tier, const std::string& id) {
  REQUIRE(tier.create(id, kPrivatePidSpec).status.ok());
  REQUIRE(tier.start(id).status.ok());
  tier.reaper.exit(pid_of(id), 0);
  for (int i = 0; i < 500 && tier.state(id) != types::STOPPED; ++i)
    std::this_thread::sleep_for(5ms);
  REQUIRE(tier.state(id) == types::STOPPED);
}

// Shutdown over task API v3, as containerd 2.x calls a sandboxed task's shim; then a
// Connect round trip, so the handler has finished.
shim::test::CallResult shutdown_v3(Tier& tier) {
  auto result = tier.client->call("containerd.task.v3.Task", "Shutdown",
                                  task::ShutdownRequest().SerializeAsString());
  REQUIRE(tier.call<task::ConnectResponse>("Connect", task::ConnectRequest()).status.ok());
  return result;
}

}  // namespace

TEST_CASE("shutdown rule: keepers are asked in order, a throwing one keeps the shim",
          "[shutdown]") {
  CountingShutdown control;
  CHECK(control.shutdown_if_unused().empty());  // no keeper: ends
  CHECK(control.requests == 1);

  std::string tasks_reason = "2 container(s)";
  std::string sandbox_reason = "sandbox s1 ready";
  control.set_keeper("tasks", [&] { return tasks_reason; });
  control.set_keeper("sandbox", [&] { return sandbox_reason; });
  CHECK(control.shutdown_if_unused() == "tasks: 2 container(s)");
  tasks_reason.clear();
  CHECK(control.shutdown_if_unused() == "sandbox: sandbox s1 ready");
  CHECK(control.requests == 1);

  // Same name: replaced, keeping its place.
  control.set_keeper("tasks", [] { return std::string("replaced"); });
  CHECK(control.shutdown_if_unused() == "tasks: replaced");
  control.remove_keeper("tasks");
  CHECK(control.shutdown_if_unused() == "sandbox: sandbox s1 ready");

  control.set_keeper("sandbox", []() -> std::string { throw std::runtime_error("lost state"); });
  CHECK(control.shutdown_if_unused() == "sandbox: shutdown keeper sandbox threw: lost state");
  CHECK(control.requests == 1);

  control.remove_keeper("sandbox");
  control.remove_keeper("absent");  // no such keeper: nothing happens
  CHECK(control.shutdown_if_unused().empty());
  CHECK(control.requests == 2);
}

TEST_CASE("shutdown rule: a shim with three containers ends only after the last delete",
          "[shutdown][tier]") {
  Tier tier;
  const std::vector<std::string> ids = {"a", "bb", "ccc"};
  for (const std::string& id : ids) run_to_exit(tier, id);

  // A Shutdown before any delete (containerd 2.4 sends one per deleted task, several may
  // race with the deletes of the others) ends nothing.
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 0);

  REQUIRE(tier.remove("a").status.ok());
  REQUIRE(tier.shutdown().status.ok());
  REQUIRE(shutdown_v3(tier).status.ok());  // the same rule over task API v3
  CHECK(tier.shutdown_control.requests == 0);
  CHECK(tier.state("bb") == types::STOPPED);  // still served

  REQUIRE(tier.remove("bb").status.ok());
  REQUIRE(shutdown_v3(tier).status.ok());
  CHECK(tier.shutdown_control.requests == 0);

  REQUIRE(tier.remove("ccc").status.ok());
  REQUIRE(shutdown_v3(tier).status.ok());
  CHECK(tier.shutdown_control.requests == 1);
}

TEST_CASE("shutdown rule: a Create under way keeps the shim", "[shutdown][tier]") {
  Tier tier;
  run_to_exit(tier, "a");
  tier.script.hold_create = true;
  auto creating = std::async(std::launch::async, [&] {
    auto client = std::make_unique<shim::test::SyncClient>(tier.dir.sub("task.sock"));
    task::CreateTaskRequest request;
    request.set_id("bb");
    request.set_bundle(tier.bundle("bb", kPrivatePidSpec));
    return client->call("containerd.task.v2.Task", "Create", request.SerializeAsString()).status;
  });
  REQUIRE(tier.script.wait_for_call("create held"));

  // The only container is deleted while "bb" is being created: its Shutdown must not
  // end the shim that is about to serve "bb".
  REQUIRE(tier.remove("a").status.ok());
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 0);

  tier.script.release_create();
  REQUIRE(creating.get().ok());
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 0);  // "bb" is created, not yet deleted

  REQUIRE(tier.start("bb").status.ok());
  tier.reaper.exit(pid_of("bb"), 0);
  for (int i = 0; i < 500 && tier.state("bb") != types::STOPPED; ++i)
    std::this_thread::sleep_for(5ms);
  REQUIRE(tier.remove("bb").status.ok());
  REQUIRE(tier.shutdown().status.ok());
  CHECK(tier.shutdown_control.requests == 1);
}

TEST_CASE("shutdown rule: another service's keeper (a live sandbox) keeps the shim",
          "[shutdown][tier]") {
  Tier tier;
  bool sandbox_ready = true;
  tier.io.run([&] {
    tier.shutdown_control.set_keeper(
        "sandbox", [&] { return sandbox_ready ? std::string("sandbox s1 ready") : std::string(); });
  });
  run_to_exit(tier, "a");
  REQUIRE(tier.remove("a").status.ok());
  REQUIRE(shutdown_v3(tier).status.ok());
  CHECK(tier.shutdown_control.requests == 0);

  tier.io.run([&] { sandbox_ready = false; });
  REQUIRE(shutdown_v3(tier).status.ok());
  CHECK(tier.shutdown_control.requests == 1);
  tier.io.run([&] { tier.shutdown_control.remove_keeper("sandbox"); });
}

TEST_CASE("shutdown rule: the task service's keeper leaves with the service", "[shutdown][tier]") {
  Tier tier;
  run_to_exit(tier, "a");
  std::string reason;
  tier.io.run([&] { reason = tier.shutdown_control.shutdown_if_unused(); });
  CHECK(reason == "tasks: 1 container(s), 0 create(s) under way");
  CHECK(tier.shutdown_control.requests == 0);
  tier.client.reset();
  tier.io.run([&] { tier.server->close(); });
  tier.io.run([&] { tier.service.reset(); });
  tier.io.run([&] { reason = tier.shutdown_control.shutdown_if_unused(); });
  CHECK(reason.empty());
  CHECK(tier.shutdown_control.requests == 1);
}
