// RuntimeTaskService across a live upgrade, on the task tier (real loop and socket, a
// scripted runtime): the state one service saves is restored by a second one, which then
// serves the containers on. The processes are the script's (no real children); the real
// shim's upgrades are tests/integration/live_upgrade_test.cpp.
#include <sys/stat.h>

#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "unit/task/tier_rules.h"

using namespace tier_rules;
using shim::Status;

namespace {

// save on `from`'s loop (after its readiness), restore on `to`'s: the status of each.
std::pair<Status, Status> carry(Tier& from, Tier& to) {
  boost::json::object state;
  std::vector<int> fds;
  Status saved = from.io.run([&] {
    Status ready = from.service->ready_for_upgrade();
    return ready.ok() ? from.service->save_for_upgrade(&state, &fds) : ready;
  });
  if (!saved.ok()) return {saved, Status()};
  // Through text, as the state crosses the exec.
  const boost::json::value text = boost::json::parse(boost::json::serialize(state));
  Status restored = to.io.run([&] { return to.service->restore_after_upgrade(text.as_object()); });
  return {saved, restored};
}

}  // namespace

TEST_CASE("tier upgrade: an exec added but not started crosses and starts in the new program",
          "[tier][upgrade]") {
  Tier old_program;
  REQUIRE(old_program.create("c1", kSharedPidSpec).status.ok());
  REQUIRE(old_program.start("c1").status.ok());
  // With stdio, as `ctr task exec` sends it: its io is made only at Start.
  const std::string out = old_program.dir.sub("e1-stdout");
  REQUIRE(::mkfifo(out.c_str(), 0600) == 0);
  task::ExecProcessRequest exec;
  exec.set_id("c1");
  exec.set_exec_id("e1");
  exec.set_stdout(out);
  exec.mutable_spec()->set_value(R"({"args":["true"],"cwd":"/"})");
  REQUIRE(old_program.call<shim::pb::Empty>("Exec", exec).status.ok());

  Tier new_program;
  auto [saved, restored] = carry(old_program, new_program);
  INFO(saved.to_string() << " / " << restored.to_string());
  REQUIRE(saved.ok());
  REQUIRE(restored.ok());
  CHECK(new_program.state("c1") == types::Status::RUNNING);
  CHECK(new_program.state("c1", "e1") == types::Status::CREATED);
  REQUIRE(new_program.start("c1", "e1").status.ok());
  CHECK(new_program.state("c1", "e1") == types::Status::RUNNING);
}
