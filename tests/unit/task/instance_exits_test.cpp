// The process tier over an Instance whose processes are not the shim's children
// (ExitSource::kInstance, shim/instance_events.h): a VM's guest processes. Their exits
// and OOMs come from the Instance; the host's reaper never matches their pids, and an
// exec is signalled through the Instance.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "unit/task/tier_rules.h"

using namespace tier_rules;

namespace {

std::shared_ptr<shim::InstanceEvents> events_of(Tier& tier, const std::string& id) {
  std::lock_guard lock(tier.script.mu);
  return tier.script.events_of.at(id);
}

}  // namespace

TEST_CASE("tier: a guest's exits come from its Instance, never from the host's reaper", "[tier]") {
  Tier tier;
  tier.script.instance_exits = true;
  script_pid(tier, "vm", 1);  // the guest's pid 1
  run(tier, "vm");
  tier.script.instance_exits = false;
  task::WaitRequest wait;
  wait.set_id("vm");
  auto waiting = tier.call_async("Wait", wait);

  // The host's pid 1 (or any host pid equal to a guest's) is not the guest's process.
  tier.reaper.exit(1, 0);
  exit_barrier(tier);
  CHECK(tier.state("vm") == types::RUNNING);
  CHECK_FALSE(answered(waiting));

  // The OOM and the exit the Instance reports go out in containerd's order.
  auto events = events_of(tier, "vm");
  events->out_of_memory();
  events->process_exited(1, 137, std::chrono::system_clock::now());
  CHECK(shim::test::eventually([&] {
    return tier.trail("vm") == std::vector<std::string>{"/tasks/create", "/tasks/start",
                                                        "/tasks/oom", "/tasks/exit vm"};
  }));
  task::WaitResponse response;
  REQUIRE(response.ParseFromString(waiting.get().payload));
  CHECK(response.exit_status() == 137);
  CHECK(tier.state("vm") == types::STOPPED);
  REQUIRE(tier.remove("vm").status.ok());

  // A report after the container was deleted (a late one) matches nothing.
  events->process_exited(1, 0, std::chrono::system_clock::now());
  events->out_of_memory();
  exit_barrier(tier);
  CHECK(tier.trail("vm").size() == 5);  // ... /tasks/delete
}

TEST_CASE("tier: a guest's exec is signalled through the Instance and exits through it", "[tier]") {
  Tier tier;
  tier.script.instance_exits = true;
  script_pid(tier, "vm", 1);
  run(tier, "vm");
  tier.script.instance_exits = false;
  run_exec(tier, "vm", "e1", 2);
  REQUIRE(outcome(tier.kill("vm", 15, false, "e1")) == "OK");
  CHECK(tier.script.wait_for_call("kill_exec e1 15"));
  events_of(tier, "vm")->process_exited(2, 143, std::chrono::system_clock::now());
  CHECK(shim::test::eventually([&] { return tier.state("vm", "e1") == types::STOPPED; }));
  CHECK(tier.wait_published("/tasks/exit"));
}
