// shim-runc with crun as BinaryName (`ctr run --runc-binary ...`). The whole [runtime-binary]
// suite runs with crun through tests/support/crun-cgroup-v1.sh (ctest `integration-crun:`);
// the cases here show what happens without that wrapper on this machine's hybrid cgroup
// layout, that crun's own messages reach the client unchanged, and that the crun run
// really drives crun. Each error text is compared with the Go shim's for the same run.
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support/runc_e2e.h"
#include "support/runtime_binary.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kUnifiedMount = "/sys/fs/cgroup/unified";
constexpr long kCgroup2Magic = 0x63677270;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A hybrid host whose cgroup2 mount holds a controller: what Debian's crun 1.8.1 refuses.
bool hybrid_with_v2_controllers() {
  struct statfs info {};
  if (::statfs(kUnifiedMount, &info) != 0 || info.f_type != kCgroup2Magic) return false;
  return read_all(fmt::format("{}/cgroup.controllers", kUnifiedMount)).find_first_not_of(" \n") !=
         std::string::npos;
}

// `ctr run` with `binary` as BinaryName, without run_flags()'s $LIBSHIM_TEST_RUNC_BINARY.
std::vector<std::string> run_with(const RuncE2e& s, const std::string& binary,
                                  const std::string& id, const std::vector<std::string>& cmd) {
  std::vector<std::string> args = {"run",          "--rm",         "--fifo-dir",
                                   s.fx.fifo_dir(), "--runc-root", s.fx.runc_root(),
                                   "--runc-binary", binary,        "--rootfs",
                                   s.rootfs,        id};
  args.insert(args.end(), cmd.begin(), cmd.end());
  return args;
}

// What crun itself logs (its last log.json "msg") when asked to create a container from
// its default spec on `rootfs`: the text a shim must pass through unchanged.
std::string crun_own_create_error(const std::string& dir, const std::string& rootfs) {
  const std::string bundle = dir + "/crun-bundle";
  fs::create_directories(bundle);
  CommandResult spec = run_command({"crun", "spec"}, {.cwd = bundle});
  REQUIRE(spec.ok());
  boost::json::value config = boost::json::parse(read_all(bundle + "/config.json"));
  config.at("process").as_object()["terminal"] = false;
  config.at("process").as_object()["args"] = boost::json::array{"/bin/true"};
  config.at("root").as_object()["path"] = rootfs;
  std::ofstream(bundle + "/config.json") << boost::json::serialize(config);
  const std::string log = bundle + "/log.json";
  CommandResult create = run_command({"crun", "--root", dir + "/crun-root", "--log", log,
                                      "--log-format", "json", "create", "--bundle", bundle,
                                      "crun-probe"});
  INFO(create.describe());
  REQUIRE(create.exit_code != 0);
  std::istringstream lines(read_all(log));
  std::string message;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    message = std::string(boost::json::parse(line).at("msg").as_string());
  }
  return message;
}

struct FailedRun {
  CommandResult result;
  std::string status_after;  // `ctr task ls` status of the task afterwards ("" = none)
  bool container_left = false;
  bool shim_left = false;
};

FailedRun run_failing(ShimUnderTest shim, const std::string& binary,
                      const std::vector<std::string>& cmd) {
  RuncE2e s(shim);
  FailedRun run;
  run.result = s.fx.ctr(run_with(s, binary, "cr1", cmd));
  run.status_after = s.task_status("cr1");
  run.container_left = !s.fx.ctr({"containers", "ls", "-q"}).out.empty();
  if (shim == ShimUnderTest::kOurs) {
    run.shim_left = !wait_no_live_shims(our_runc_shim(), s.fx.ns(), 5s);
  }
  return run;
}

TEST_CASE("plain crun on a hybrid cgroup host fails create with crun's own message as under "
          "the Go shim",
          "[runc][crun]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (auto why = runtime_binary_unavailable("crun")) LIBSHIM_SKIP(*why);
  if (!hybrid_with_v2_controllers()) {
    LIBSHIM_SKIP("no hybrid cgroup layout with a cgroup2 controller here: crun accepts it");
  }
  std::string own_message;
  {
    RuncE2e s;
    own_message = crun_own_create_error(s.fx.dir(), s.rootfs);
  }
  INFO("crun's own message: " << own_message);
  REQUIRE(own_message.find("cgroups in hybrid mode not supported") != std::string::npos);

  FailedRun ours = run_failing(ShimUnderTest::kOurs, "crun", {"/bin/true"});
  FailedRun go = run_failing(ShimUnderTest::kGo, "crun", {"/bin/true"});
  INFO("ours: " << ours.result.describe() << "\ngo:   " << go.result.describe());
  CHECK(ours.result.exit_code == 1);
  CHECK(ours.result.out.empty());
  // containerd wraps the shim's error as "OCI runtime create failed: <crun's msg>".
  CHECK(ours.result.err ==
        fmt::format("ctr: failed to create shim task: OCI runtime create failed: {}: unknown\n",
                    own_message));
  CHECK(ours.result.err == go.result.err);
  CHECK(ours.result.exit_code == go.result.exit_code);
  // Nothing is left behind: no task, no container (ctr --rm), no shim.
  CHECK(ours.status_after.empty());
  CHECK(ours.status_after == go.status_after);
  CHECK_FALSE(ours.container_left);
  CHECK(ours.container_left == go.container_left);
  CHECK_FALSE(ours.shim_left);
}

TEST_CASE("a crun create error through the wrapper reaches ctr as under the Go shim",
          "[runc][crun]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  const std::string wrapper = crun_wrapper_path();
  if (auto why = runtime_binary_unavailable(wrapper)) LIBSHIM_SKIP(*why);
  FailedRun ours = run_failing(ShimUnderTest::kOurs, wrapper, {"/no/such/binary"});
  FailedRun go = run_failing(ShimUnderTest::kGo, wrapper, {"/no/such/binary"});
  INFO("ours: " << ours.result.describe() << "\ngo:   " << go.result.describe());
  CHECK(ours.result.exit_code == 1);
  // crun's wording (runc says "runc create failed: unable to start container process: ...").
  CHECK(ours.result.err ==
        "ctr: failed to create shim task: OCI runtime create failed: executable file "
        "`/no/such/binary` not found in $PATH: No such file or directory: unknown\n");
  CHECK(ours.result.err == go.result.err);
  CHECK(ours.status_after.empty());
  CHECK_FALSE(ours.container_left);
  CHECK_FALSE(ours.shim_left);
}

// Under plain `integration:` this checks runc; under `integration-crun:` that the run
// really went through the wrapper to crun, which leaves the host's cgroup2 mount alone.
TEST_CASE("the runtime under test keeps its own state for the container",
          "[runc][crun][runtime-binary]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  const bool crun = runc_binary_under_test().has_value();
  const bool hybrid_before = hybrid_with_v2_controllers();
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "st1", {"/bin/sleep", "600"})).ok());
  REQUIRE(s.wait_status("st1", "RUNNING", 10s));
  const std::string state = fmt::format("{}/{}/st1", s.fx.runc_root(), s.fx.ns());
  // runc keeps state.json; crun keeps `status` and a copy of config.json.
  CHECK(fs::exists(state + "/state.json") == !crun);
  CHECK(fs::exists(state + "/status") == crun);
  // The container's cgroup is where its spec says (v1 memory hierarchy, else unified).
  const std::string cgroup = fs::exists("/sys/fs/cgroup/memory/cgroup.procs")
                                 ? fmt::format("/sys/fs/cgroup/memory/{}/st1", s.fx.ns())
                                 : fmt::format("/sys/fs/cgroup/{}/st1", s.fx.ns());
  CHECK(read_all(cgroup + "/cgroup.procs") == fmt::format("{}\n", s.task_pid("st1")));
  CHECK(hybrid_with_v2_controllers() == hybrid_before);
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", "st1"}).ok());
  REQUIRE(s.wait_status("st1", "STOPPED", 10s));
  REQUIRE(s.fx.ctr_ok({"task", "rm", "st1"}).ok());
  CHECK_FALSE(fs::exists(state));
}

}  // namespace
}  // namespace shim::test
