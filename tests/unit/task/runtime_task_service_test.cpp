// The process tier's task service over a scripted Runtime, served on a real ttrpc socket:
// the order of events and runtime calls libshim guarantees a vendor, and its defaults.
// Exits are injected through a fake reaper, so no container process is needed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/unique_fd.h"
#include "unit/task/scripted_tier.h"

namespace {

using namespace std::chrono_literals;
namespace task = containerd::task::v2;

using shim::test::kPrivatePidSpec;
using shim::test::kSharedPidSpec;
using shim::test::Tier;

}  // namespace

TEST_CASE(
    "tier: the rest of a container without its own pid namespace is killed before its TaskExit",
    "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kSharedPidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.hold_kill = true;
  }
  tier.reaper.exit(4002, 0);  // the init (pid 4000 + id length)
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(tier.published("/tasks/exit"));  // held while the kill runs
  // A Delete arriving meanwhile waits behind the kill, in order.
  task::DeleteRequest remove;
  remove.set_id("c1");
  auto deleted = std::async(std::launch::async, [&] {
    task::DeleteResponse response;
    return tier.call("Delete", remove, &response);
  });
  std::this_thread::sleep_for(50ms);
  tier.script.release_kill();
  REQUIRE(tier.script.wait_for_call("remove"));
  CHECK(deleted.get().status.ok());
  std::vector<std::string> calls;
  {
    std::lock_guard lock(tier.script.mu);
    calls = tier.script.calls;
  }
  CHECK(calls == std::vector<std::string>{"create", "start", "kill 9 all", "remove"});
  CHECK(tier.publisher.topics() ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"});
}

TEST_CASE("tier: a container with its own pid namespace is not killed again at its init's exit",
          "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c2", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c2").status.ok());
  tier.reaper.exit(4002, 137);
  for (int i = 0; i < 100 && !tier.published("/tasks/exit"); ++i) std::this_thread::sleep_for(10ms);
  CHECK(tier.published("/tasks/exit"));
  std::lock_guard lock(tier.script.mu);
  CHECK(tier.script.calls == std::vector<std::string>{"create", "start"});
}

// ctr 1.6.20 closes its FIFOs as soon as it learns of the exit: output it has not read
// then is lost. So the TaskExit waits for the client's reads (for at most 100 ms without
// any). Only the lower bound is checked: it holds however loaded the machine is.
TEST_CASE("tier: a TaskExit waits for the client to read the process's last output", "[tier]") {
  Tier tier;
  tier.script.output = "last words\n";
  const std::string fifo = tier.dir.sub("c3-stdout");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  shim::UniqueFd client(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // ctr's end
  REQUIRE(client.valid());
  REQUIRE(tier.create("c3", kPrivatePidSpec, fifo).status.ok());
  REQUIRE(tier.start("c3").status.ok());
  const bool reads = GENERATE(false, true);
  const auto exited = std::chrono::steady_clock::now();
  tier.reaper.exit(4002, 0);
  char buffer[64];
  ssize_t got = 0;
  for (int i = 0; i < 400 && !tier.published("/tasks/exit"); ++i) {
    if (reads && got <= 0) got = ::read(client.get(), buffer, sizeof buffer);
    std::this_thread::sleep_for(5ms);
  }
  const auto held = std::chrono::steady_clock::now() - exited;
  REQUIRE(tier.published("/tasks/exit"));
  if (reads) {
    CHECK(std::string(buffer, static_cast<std::size_t>(std::max<ssize_t>(got, 0))) ==
          "last words\n");
  } else {
    CHECK(held >= 95ms);  // nobody read: held for the stall time, then published
    CHECK(::read(client.get(), buffer, sizeof buffer) == 11);  // nothing taken from the client
  }
}

// A Delete that comes while the exit waits (`ctr task rm` right after a kill) waits for
// the TaskExit: /tasks/delete must follow it.
TEST_CASE("tier: a Delete while the TaskExit waits for the output comes after it", "[tier]") {
  Tier tier;
  tier.script.output = "never read\n";
  const std::string fifo = tier.dir.sub("c4-stdout");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  shim::UniqueFd client(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  REQUIRE(client.valid());
  REQUIRE(tier.create("c4", kPrivatePidSpec, fifo).status.ok());
  REQUIRE(tier.start("c4").status.ok());
  tier.reaper.exit(4002, 3);
  // The Delete may run once State says stopped, which is at once.
  task::StateRequest state;
  state.set_id("c4");
  task::StateResponse status;
  for (int i = 0; i < 200; ++i) {
    REQUIRE(tier.call("State", state, &status).status.ok());
    if (status.status() == containerd::v1::types::STOPPED) break;
    std::this_thread::sleep_for(1ms);
  }
  task::DeleteRequest remove;
  remove.set_id("c4");
  task::DeleteResponse deleted;
  REQUIRE(tier.call("Delete", remove, &deleted).status.ok());
  CHECK(deleted.exit_status() == 3);
  CHECK(tier.publisher.topics() ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"});
}

TEST_CASE("tier: a runtime's refusal at open leaves no container and no event", "[tier]") {
  Tier tier;
  auto refused = tier.create("refused", kPrivatePidSpec);
  CHECK(refused.status.code() == shim::Code::kInvalidArgument);
  CHECK(refused.status.message() == "refused by the runtime: invalid argument");
  CHECK(tier.start("refused").status.message() == "container not created: not found");
  CHECK(tier.publisher.topics().empty());
  // The id is free again.
  CHECK(tier.create("refused2", kPrivatePidSpec).status.ok());
}

TEST_CASE("tier: Go's state machine texts come before any runtime call", "[tier]") {
  Tier tier;
  tier.script.pids["c3"] = 4194400;  // above PID_MAX_LIMIT: surely no process, no cgroup
  REQUIRE(tier.create("c3", kPrivatePidSpec).status.ok());
  task::PauseRequest pause;
  pause.set_id("c3");
  CHECK(tier.call<shim::pb::Empty>("Pause", pause).status.message() ==
        "cannot pause task in created state");
  REQUIRE(tier.start("c3").status.ok());
  CHECK(tier.start("c3").status.message() == "cannot start a running process");
  // The scripted runtime has no pause: containerd hears Unimplemented.
  CHECK(tier.call<shim::pb::Empty>("Pause", pause).status.code() == shim::Code::kUnimplemented);
  task::StatsRequest stats;
  stats.set_id("c3");
  // No cgroup was found for the pid: Go's NotFound.
  CHECK(tier.call<task::StatsResponse>("Stats", stats).status.message() ==
        "cgroup does not exist: not found");
}

TEST_CASE("tier: kill of an Instance without kill() falls back to the init's pidfd", "[tier]") {
  Tier tier;
  tier.script.kill_override = false;
  // Above PID_MAX_LIMIT: no pidfd can be opened, so the init counts as gone. (A made-up
  // pid like 4002 may belong to a live process of the host, which would get the signal.)
  tier.script.pids["c4"] = 4194400;
  REQUIRE(tier.create("c4", kPrivatePidSpec).status.ok());
  task::KillRequest kill;
  kill.set_id("c4");
  kill.set_signal(15);
  CHECK(tier.call<shim::pb::Empty>("Kill", kill).status.message() ==
        "process already finished: not found");
}
