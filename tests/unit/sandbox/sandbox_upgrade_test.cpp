// The sandbox service's part in a live upgrade (sandbox/sandbox_upgrade.cpp): no sandbox
// saves null and restores nothing; a call under way makes the quiesce wait; a plug-in
// sandbox without save_for_upgrade, or a runtime without reopen, refuses with the reason.
#include <string>
#include <vector>

#include <boost/json/object.hpp>
#include <catch2/catch.hpp>

#include "unit/sandbox/scripted_sandbox.h"

namespace {

using shim::Code;
using shim::Status;
using shim::test::Pod;
namespace json = boost::json;

// Runs the service's participant calls on its loop, as the upgrade does.
template <class Fn>
Status on_loop(Pod& pod, Fn fn) {
  Status result;
  pod.io.run([&] { result = fn(); });
  return result;
}

}  // namespace

TEST_CASE("sandbox upgrade: no sandbox crosses as null", "[sandbox][upgrade]") {
  Pod pod;
  json::object state;
  std::vector<int> fds;
  CHECK(on_loop(pod, [&] { return pod.sandboxes->ready_for_upgrade(); }).ok());
  REQUIRE(on_loop(pod, [&] { return pod.sandboxes->save_for_upgrade(&state, &fds); }).ok());
  CHECK(state == json::object{{"sandbox", nullptr}});
  CHECK(fds.empty());
  CHECK(on_loop(pod, [&] { return pod.sandboxes->restore_after_upgrade(state); }).ok());
  Status missing = on_loop(pod, [&] { return pod.sandboxes->restore_after_upgrade({}); });
  CHECK(missing.code() == Code::kFailedPrecondition);
}

TEST_CASE("sandbox upgrade: a call under way waits, a sandbox that cannot save refuses",
          "[sandbox][upgrade]") {
  Pod pod;
  REQUIRE(pod.create("sb1").status.ok());
  pod.script.hold("start");
  auto started = pod.client->call_async(std::string(shim::kSandboxService), "StartSandbox", [] {
    shim::sandbox_api::StartSandboxRequest request;
    request.set_sandbox_id("sb1");
    return request.SerializeAsString();
  }());
  REQUIRE(pod.script.wait_until_held("start"));
  Status busy = on_loop(pod, [&] { return pod.sandboxes->ready_for_upgrade(); });
  CHECK(busy == Status(Code::kUnavailable, "sandbox sb1: a call is under way"));
  pod.script.release("start");
  REQUIRE(started.get().status.ok());
  pod.settle();

  CHECK(on_loop(pod, [&] { return pod.sandboxes->ready_for_upgrade(); }).ok());
  json::object state;
  std::vector<int> fds;
  Status refused = on_loop(pod, [&] { return pod.sandboxes->save_for_upgrade(&state, &fds); });
  CHECK(refused == Status(Code::kUnimplemented,
                          "sandbox sb1: this sandbox cannot be carried across a live upgrade"));
}

TEST_CASE("sandbox upgrade: a runtime without reopen refuses the saved sandbox",
          "[sandbox][upgrade]") {
  Pod pod;
  json::object state = {{"sandbox",
                         {{"id", "sb1"},
                          {"bundle", "/run/b"},
                          {"netns_path", ""},
                          {"created_at", 1},
                          {"started_at", nullptr},
                          {"pid", 0},
                          {"exit", nullptr},
                          {"fds", json::array()},
                          {"state", json::object()}}}};
  Status refused = on_loop(pod, [&] { return pod.sandboxes->restore_after_upgrade(state); });
  CHECK(refused == Status(Code::kUnimplemented,
                          "sandbox sb1: this sandbox runtime cannot reopen sandbox sb1 after a "
                          "live upgrade"));
  CHECK(pod.ping("sb1").status.code() == Code::kNotFound);  // nothing half-restored
}
