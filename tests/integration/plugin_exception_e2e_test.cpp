// A vendor's plug-in that throws, under the real containerd and runc: the shim over runc
// whose Runtime::open or Instance::pause throws (tests/shims/throwing_shim.cpp). ctr gets
// an error naming the method; the container is not wedged, and no shim is left behind.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

std::string throwing_shim() {
  return std::filesystem::canonical(std::string(LIBSHIM_BINARY_DIR) +
                                    "/tests/containerd-shim-throwing-v1")
      .string();
}

// ctr run <flags> --runtime <throwing shim> [--env LIBSHIM_TEST_THROW=<methods>] <id> <cmd>
std::vector<std::string> run_args(const RuncE2e& s, std::vector<std::string> flags,
                                  const std::string& throws, const std::string& id,
                                  const std::vector<std::string>& cmd) {
  std::vector<std::string> args = {"run", "--runtime", throwing_shim()};
  args.insert(args.end(), flags.begin(), flags.end());
  if (!throws.empty()) args.insert(args.end(), {"--env", "LIBSHIM_TEST_THROW=" + throws});
  for (const auto& flag : s.fx.run_flags(/*with_runc_root=*/false)) args.push_back(flag);
  args.insert(args.end(), {"--rootfs", s.rootfs, id});
  args.insert(args.end(), cmd.begin(), cmd.end());
  return args;
}

TEST_CASE("a throwing Instance::pause: ctr sees the error, the task runs on, kill and rm work",
          "[plugin-exception-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  s.fx.ctr_ok(run_args(s, {"-d"}, "pause", "p1", {"/bin/sleep", "600"}));
  REQUIRE(s.wait_status("p1", "RUNNING", 20s));
  auto paused = s.fx.ctr({"task", "pause", "p1"}, 20s);
  CHECK(paused.exit_code != 0);
  CHECK_THAT(paused.out + paused.err, Catch::Contains("Instance::pause threw: boom in pause"));
  CHECK(s.task_status("p1") == "RUNNING");
  // The wedge: kill hung past 20 s behind a PAUSING task, rm was refused.
  auto killed = s.fx.ctr({"task", "kill", "-s", "KILL", "p1"}, 20s);
  CHECK(killed.exit_code == 0);
  REQUIRE(s.wait_status("p1", "STOPPED", 20s));
  CHECK(s.fx.ctr({"task", "rm", "p1"}, 20s).exit_code == 0);
  CHECK(s.fx.ctr({"container", "rm", "p1"}, 20s).exit_code == 0);
  CHECK(wait_no_live_shims(throwing_shim(), s.fx.ns(), 10s));
}

TEST_CASE(
    "a throwing Runtime::open: ctr run fails with its text, the id runs afterwards, no shim left",
    "[plugin-exception-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  auto refused = s.fx.ctr(run_args(s, {"--rm"}, "open", "o1", {"/bin/true"}), 30s);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.out + refused.err, Catch::Contains("Runtime::open threw: boom in open"));
  CHECK(wait_no_live_shims(throwing_shim(), s.fx.ns(), 10s));
  s.fx.ctr({"container", "rm", "o1"}, 20s);
  // The same id again, this time without the throw: it runs to its exit code.
  auto ran = s.fx.ctr(run_args(s, {"--rm"}, "", "o1", {"/bin/sh", "-c", "echo ran; exit 4"}), 30s);
  CHECK(ran.exit_code == 4);
  CHECK(ran.out == "ran\n");
  CHECK(wait_no_live_shims(throwing_shim(), s.fx.ns(), 10s));
}

}  // namespace
}  // namespace shim::test
