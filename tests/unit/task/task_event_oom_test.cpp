// The process tier's TaskOOM ordering with a real OOM kill (root and a cgroup v1 memory
// controller, as the OomWatcher tests; skipped elsewhere): the scripted init is a child
// of the test in an 8 MiB memory cgroup, Create loads that cgroup from its pid and
// watches it, and the child's exit is injected once the kernel killed it.
#include <unistd.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/skip.h"
#include "unit/linux/oom_cgroup_child.h"
#include "unit/task/tier_rules.h"

using namespace tier_rules;

TEST_CASE("tier events: TaskOOM goes out after TaskStart and before the init's TaskExit",
          "[tier]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root to create memory cgroups");
  oom_test::TestCgroups cgroups;
  if (!cgroups.create()) LIBSHIM_SKIP("no usable cgroup v1 memory controller on this host");
  oom_test::Allocator child;
  cgroups.limit_and_move(child.pid());
  REQUIRE(child.touch_a_little());
  Tier tier;
  script_pid(tier, "c1", static_cast<std::uint32_t>(child.pid()));
  REQUIRE(tier.create("c1", kPrivatePidSpec).status.ok());
  auto killed = [&] {
    child.allocate();
    int status = child.wait(10000ms);
    REQUIRE(status != -1);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
  };
  SECTION("killed while running: the watch's report or the check at the exit, first") {
    REQUIRE(tier.start("c1").status.ok());
    killed();
    tier.reaper.exit(child.pid(), 137);
  }
  SECTION("killed while its Start is under way: both wait for TaskStart") {
    tier.script.hold("start c1");
    task::StartRequest start;
    start.set_id("c1");
    auto starting = tier.call_async("Start", start);
    REQUIRE(tier.script.wait_until_held("start c1"));
    killed();
    tier.reaper.exit(child.pid(), 137);
    exit_barrier(tier);  // the kernel's OOM notification has been read by now
    CHECK(tier.trail("c1") == std::vector<std::string>{"/tasks/create"});
    tier.script.release("start c1");
    CHECK(outcome(starting.get()) == "OK");
  }
  CHECK(shim::test::eventually([&] {
    return tier.trail("c1") == std::vector<std::string>{"/tasks/create", "/tasks/start",
                                                        "/tasks/oom", "/tasks/exit c1"};
  }));
}
