// The sandbox's end and the shim's: WaitSandbox held without a thread and answered by
// StopSandbox, by the sandbox's own exit report (any thread) or by ShutdownSandbox;
// StopSandbox idempotent; ShutdownSandbox in any state; the "sandbox" keeper that keeps
// the shim through the task API's Shutdown (shim/shutdown_control.h).
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/timestamp.h"
#include "unit/sandbox/scripted_sandbox.h"

namespace {

using namespace std::chrono_literals;
using shim::Code;
using shim::test::CallResult;
using shim::test::parsed;
using shim::test::Pod;
namespace sandbox_api = containerd::runtime::sandbox::v1;

sandbox_api::WaitSandboxResponse waited(std::future<CallResult>& wait) {
  REQUIRE(wait.wait_for(5s) == std::future_status::ready);
  return parsed<sandbox_api::WaitSandboxResponse>(wait.get());
}

// A WaitSandbox that is still held after a while (and after a round trip on the socket).
void check_held(Pod& pod, std::future<CallResult>& wait) {
  REQUIRE(pod.ping("sb1").status.ok());
  CHECK(wait.wait_for(50ms) == std::future_status::timeout);
}

void create_and_start(Pod& pod) {
  REQUIRE(pod.create("sb1").status.ok());
  REQUIRE(pod.start("sb1").status.ok());
}

}  // namespace

TEST_CASE("sandbox lifetime: WaitSandbox is held until StopSandbox, then every waiter is answered",
          "[sandbox]") {
  Pod pod;
  pod.script.stop_status = 143;
  create_and_start(pod);
  std::vector<std::future<CallResult>> waits;
  for (int i = 0; i < 20; ++i) waits.push_back(pod.wait_async("sb1"));
  for (auto& wait : waits) check_held(pod, wait);
  // The waits hold no pool thread: vendor calls still run.
  sandbox_api::PlatformRequest platform;
  platform.set_sandbox_id("sb1");
  REQUIRE(pod.call<sandbox_api::PlatformResponse>("Platform", platform).status.ok());

  REQUIRE(pod.stop("sb1", 10).status.ok());
  auto status = pod.status("sb1");
  CHECK(status.state() == "SANDBOX_NOTREADY");
  CHECK(status.exited_at().seconds() != shim::kGoZeroTimeSeconds);
  for (auto& wait : waits) {
    auto answer = waited(wait);
    CHECK(answer.exit_status() == 143);
    CHECK(answer.exited_at().seconds() == status.exited_at().seconds());
    CHECK(answer.exited_at().nanos() == status.exited_at().nanos());
  }
  // Once exited, a WaitSandbox (CRI re-issues it after a containerd restart) is answered
  // at once with the same exit.
  auto later = pod.wait_async("sb1");
  auto again = waited(later);
  CHECK(again.exit_status() == 143);
  CHECK(again.exited_at().nanos() == status.exited_at().nanos());
  // Stop is idempotent: no second vendor call.
  REQUIRE(pod.stop("sb1").status.ok());
  CHECK(pod.script.recorded() ==
        std::vector<std::string>{"create sb1", "start", "platform", "stop 10"});
}

TEST_CASE("sandbox lifetime: the sandbox's own exit, reported from another thread, answers waits",
          "[sandbox]") {
  Pod pod;
  create_and_start(pod);
  auto wait = pod.wait_async("sb1");
  check_held(pod, wait);
  shim::SandboxEvents* events = nullptr;
  {
    std::lock_guard lock(pod.script.mu);
    events = pod.script.events;
  }
  REQUIRE(events != nullptr);
  std::thread reporter([events] { events->exited(9); });
  reporter.join();
  auto answer = waited(wait);
  CHECK(answer.exit_status() == 9);
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
  // Later reports are ignored; StopSandbox answers OK without calling stop().
  events->exited(1);
  pod.settle();
  auto second = pod.wait_async("sb1");
  CHECK(waited(second).exit_status() == 9);
  REQUIRE(pod.stop("sb1").status.ok());
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1", "start"});
  REQUIRE(pod.shutdown("sb1").status.ok());
}

TEST_CASE("sandbox lifetime: StopSandbox before StartSandbox only marks the sandbox stopped",
          "[sandbox]") {
  Pod pod;
  REQUIRE(pod.create("sb1").status.ok());
  auto wait = pod.wait_async("sb1");
  check_held(pod, wait);
  REQUIRE(pod.stop("sb1").status.ok());
  CHECK(waited(wait).exit_status() == 0);
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
  auto start = pod.start("sb1");
  CHECK(start.status.code() == Code::kFailedPrecondition);
  CHECK(start.status.message() == "sandbox sb1 is stopped: failed precondition");
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1", "shutdown"});
}

TEST_CASE("sandbox lifetime: ShutdownSandbox answers held waits and removes the sandbox",
          "[sandbox]") {
  Pod pod;
  create_and_start(pod);
  auto wait = pod.wait_async("sb1");
  check_held(pod, wait);
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(waited(wait).exit_status() == 137);  // torn down without a stop
  CHECK(pod.ping("sb1").status.code() == Code::kNotFound);
  CHECK(pod.start("sb1").status.message() == "sandbox sb1: not found");
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1", "start", "shutdown"});
  // A second ShutdownSandbox (a retry) is OK.
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.script.recorded().size() == 3);
}

TEST_CASE("sandbox lifetime: a waiter whose client went away does not disturb the others",
          "[sandbox]") {
  Pod pod;
  create_and_start(pod);
  {
    shim::test::SyncClient gone(pod.dir.sub("pod.sock"));
    sandbox_api::WaitSandboxRequest request;
    request.set_sandbox_id("sb1");
    auto abandoned = gone.call_async(std::string(shim::kSandboxService), "WaitSandbox",
                                     request.SerializeAsString());
    CHECK(abandoned.wait_for(50ms) == std::future_status::timeout);
  }  // disconnects with its WaitSandbox held
  REQUIRE(shim::test::eventually([&] { return pod.server->connection_count() == 1; }));
  auto wait = pod.wait_async("sb1");
  check_held(pod, wait);
  REQUIRE(pod.stop("sb1").status.ok());
  CHECK(waited(wait).exit_status() == 0);
  CHECK(pod.ping("sb1").status.ok());
}

TEST_CASE("sandbox lifetime: ShutdownSandbox works in every state and after a failed start",
          "[sandbox]") {
  Pod pod;
  SECTION("created") { REQUIRE(pod.create("sb1").status.ok()); }
  SECTION("start failed") {
    REQUIRE(pod.create("sb1").status.ok());
    pod.script.fails["start"] = shim::Status(Code::kInternal, "no vm");
    REQUIRE(pod.start("sb1").status.code() == Code::kInternal);
  }
  SECTION("stopped") {
    create_and_start(pod);
    REQUIRE(pod.stop("sb1").status.ok());
  }
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.script.recorded().back() == "shutdown");
  CHECK(pod.ping("sb1").status.code() == Code::kNotFound);
  CHECK(pod.shutdown_control.requests == 1);
}

TEST_CASE("sandbox lifetime: a failed create leaves nothing, ShutdownSandbox then ends the shim",
          "[sandbox]") {
  // containerd's controller answers a failed CreateSandbox with ShutdownSandbox and then
  // only closes its connection (plugins/sandbox/controller.go, cleanupShim).
  Pod pod;
  pod.script.fails["create"] = shim::Status(Code::kInvalidArgument, "bad pod config");
  SECTION("create made no sandbox") {}
  SECTION("create made a sandbox anyway: it is shut down at once") {
    pod.script.create_leaves_sandbox = true;
  }
  REQUIRE(pod.create("sb1").status.code() == Code::kInvalidArgument);
  const bool leaves = pod.script.create_leaves_sandbox;
  CHECK(pod.script.recorded() == (leaves ? std::vector<std::string>{"create sb1", "shutdown"}
                                         : std::vector<std::string>{"create sb1"}));
  CHECK(pod.shutdown_control.requests == 0);
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.shutdown_control.requests == 1);
  CHECK(pod.script.recorded().size() == (leaves ? 2u : 1u));  // no second shutdown()
}

TEST_CASE("sandbox lifetime: a failed shutdown keeps the sandbox for containerd's retry",
          "[sandbox]") {
  Pod pod;
  create_and_start(pod);
  pod.script.fails["shutdown"] = shim::Status(Code::kUnavailable, "umount busy");
  auto failed = pod.shutdown("sb1");
  CHECK(failed.status.code() == Code::kUnavailable);
  CHECK(failed.status.message() == "umount busy");
  CHECK(pod.ping("sb1").status.ok());
  CHECK(pod.shutdown_control.requests == 0);
  pod.script.fails.clear();
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.shutdown_control.requests == 1);
}

TEST_CASE("sandbox lifetime: the sandbox keeps the shim through the task API's Shutdown",
          "[sandbox][shutdown]") {
  Pod pod;
  // Before any sandbox, nothing keeps the shim.
  REQUIRE(pod.task_shutdown().status.ok());
  CHECK(pod.shutdown_control.requests == 1);

  create_and_start(pod);
  pod.run_task_to_deletion("c1");
  // containerd sends Shutdown after every task delete: the pod's shim stays.
  REQUIRE(pod.task_shutdown().status.ok());
  CHECK(pod.shutdown_control.requests == 1);
  REQUIRE(pod.stop("sb1").status.ok());
  REQUIRE(pod.task_shutdown().status.ok());
  CHECK(pod.shutdown_control.requests == 1);  // stopped, but still there
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.shutdown_control.requests == 2);
}

TEST_CASE(
    "sandbox lifetime: ShutdownSandbox with a task left ends the shim at that task's Shutdown",
    "[sandbox][shutdown]") {
  Pod pod;
  create_and_start(pod);
  REQUIRE(pod.create_task("c1").status.ok());
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.shutdown_control.requests == 0);  // the task tier's container keeps it
  containerd::task::v2::DeleteRequest remove;
  remove.set_id("c1");
  REQUIRE(pod.client->call("containerd.task.v3.Task", "Delete", remove.SerializeAsString())
              .status.ok());
  REQUIRE(pod.task_shutdown().status.ok());
  CHECK(pod.shutdown_control.requests == 1);
}

TEST_CASE("sandbox lifetime: a create under way keeps the shim", "[sandbox][shutdown]") {
  Pod pod;
  pod.script.hold("create");
  sandbox_api::CreateSandboxRequest request;
  request.set_sandbox_id("sb1");
  auto creating = pod.call_async("CreateSandbox", request);
  REQUIRE(pod.script.wait_until_held("create"));
  REQUIRE(pod.task_shutdown().status.ok());
  CHECK(pod.shutdown_control.requests == 0);
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
  // Calls behind the create wait for it.
  auto starting = pod.call_async("StartSandbox", [] {
    sandbox_api::StartSandboxRequest start;
    start.set_sandbox_id("sb1");
    return start;
  }());
  CHECK(starting.wait_for(50ms) == std::future_status::timeout);
  pod.script.release("create");
  REQUIRE(creating.get().status.ok());
  REQUIRE(starting.get().status.ok());
  CHECK(pod.status("sb1").state() == "SANDBOX_READY");
}
