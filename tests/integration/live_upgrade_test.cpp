// Live upgrade (docs/live-upgrade.md) of the built shim-runc daemon, started as containerd
// 1.6 starts it (tests/support/example_shim_sandbox.h plays containerd): `<binary> ...
// upgrade` swaps its program in place, over and over, between two builds (ours and
// containerd-shim-upgrade-next-v1, whose version differs), while a connection made before
// the first swap stays open and keeps being answered. The refusals leave the old program
// serving: a binary that fails at once, one that refuses the state after the exec (the
// old program is exec'd again), a relative path. Under a real containerd and runc: a
// container without stdio and one streaming stdout to an attached ctr cross the swaps;
// one logging through a binary:// logger keeps its logger across four swaps.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/libshim/upgrade.pb.h"
#include "support/events_subscriber.h"
#include "support/example_shim_sandbox.h"
#include "support/runc_e2e.h"
#include "support/skip.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/ttrpc_harness.h"
#include "support/wait_until.h"

namespace {

namespace fs = std::filesystem;
using shim::test::Caller;
using shim::test::ShimRun;
using shim::test::ShimSandbox;

constexpr const char* kTaskV2 = "containerd.task.v2.Task";
constexpr const char* kUpgrade = "libshim.upgrade.v1.Upgrade";

std::string runc_shim() {
  return std::string(LIBSHIM_BINARY_DIR) + "/shim-runc/containerd-shim-runc-v2";
}
std::string test_shim(const std::string& name) {
  return fmt::format("{}/tests/containerd-shim-upgrade-{}-v1", LIBSHIM_BINARY_DIR, name);
}

std::string exe_of(pid_t pid) {
  std::error_code error;
  return fs::read_symlink(fmt::format("/proc/{}/exe", pid), error).string();
}

// `binary ... upgrade` for the shim of `id`, as an operator runs it.
ShimRun run_upgrade(const ShimSandbox& sb, const std::string& binary, const std::string& id) {
  return shim::test::run_shim({binary, "-namespace", shim::test::kSandboxNamespace, "-address",
                               sb.grpc(), "-id", id, "upgrade"},
                              shim::test::clean_env({}), "", sb.dir(), std::chrono::seconds(30));
}

// The same for the shim of container `id` under the private containerd of `s`.
ShimRun run_upgrade_of(const shim::test::RuncE2e& s, const std::string& binary,
                       const std::string& id) {
  return shim::test::run_shim(
      {binary, "-namespace", s.fx.ns(), "-address", s.fx.grpc_address(), "-id", id, "upgrade"},
      shim::test::clean_env({}), "", "/", std::chrono::seconds(30));
}

// Swap `swap` (1, 2, ...) of the shim of container `id`, whose daemon is `shim`: odd ones
// to the other build, even ones back to ours; the upgrade succeeds and the exe follows.
// Returns the binary swapped to.
std::string swap_once(const shim::test::RuncE2e& s, const std::string& id, pid_t shim, int swap) {
  const std::string binary = swap % 2 == 1 ? test_shim("next") : runc_shim();
  ShimRun run = run_upgrade_of(s, binary, id);
  INFO("swap " << swap << ": " << run.describe());
  REQUIRE(run.exit_code == 0);
  CHECK(exe_of(shim) == fs::canonical(binary).string());
  return binary;
}

// Connect on a connection that predates the swaps: answered by the program now running.
std::uint32_t connect_pid(shim::test::SyncClient& client) {
  return shim::test::connect_shim_pid(client, kTaskV2);
}

shim::Status replace(shim::test::SyncClient& client, const std::string& binary) {
  shim::pb::upgrade::ReplaceRequest request;
  request.set_binary(binary);
  return client.call(kUpgrade, "Replace", request.SerializeAsString()).status;
}

struct Daemon {
  std::string address;
  pid_t pid = -1;
};

Daemon start_daemon(ShimSandbox& sb, const std::string& id) {
  const std::string bundle = sb.make_bundle(id);
  ShimRun start = sb.start(Caller::k1_6, id, bundle);
  INFO(start.describe());
  REQUIRE(start.exit_code == 0);
  Daemon daemon;
  daemon.address = start.out;
  daemon.pid = shim::test::serving_daemon(daemon.address);
  return daemon;
}

}  // namespace

TEST_CASE("Live upgrade: shim-runc swaps its program in place, pid and connections kept",
          "[upgrade]") {
  shim::test::SubreaperScope subreaper;
  ShimSandbox sb(runc_shim());
  Daemon daemon = start_daemon(sb, "up1");
  shim::test::SyncClient held(daemon.address);
  REQUIRE(connect_pid(held) == static_cast<std::uint32_t>(daemon.pid));
  REQUIRE(exe_of(daemon.pid) == runc_shim());

  const std::vector<std::string> binaries = {test_shim("next"), runc_shim()};
  const std::vector<std::string> versions = {"upgrade-next", LIBSHIM_TEST_VERSION};
  std::vector<double> swap_ms;
  for (int i = 0; i < 20; ++i) {
    const std::string& binary = binaries[i % 2];
    ShimRun run = run_upgrade(sb, binary, "up1");
    INFO(run.describe() << "\n" << sb.logs());
    REQUIRE(run.exit_code == 0);
    REQUIRE(run.out.rfind(fmt::format("shim pid {} now runs {} ({}); swap ", daemon.pid, binary,
                                      versions[i % 2]),
                          0) == 0);
    swap_ms.push_back(std::stod(run.out.substr(run.out.rfind("swap ") + 5)));
    CHECK(exe_of(daemon.pid) == binary);
    CHECK(connect_pid(held) == static_cast<std::uint32_t>(daemon.pid));
  }
  std::sort(swap_ms.begin(), swap_ms.end());
  WARN(fmt::format("20 swaps: p50 {:.1f} ms, max {:.1f} ms", swap_ms[swap_ms.size() / 2],
                   swap_ms.back()));
  CHECK(swap_ms.back() < 1000.0);
  // A new connection finds the same daemon; SIGTERM still ends it cleanly.
  CHECK(shim::test::connect_shim_pid(daemon.address, kTaskV2) ==
        static_cast<std::uint32_t>(daemon.pid));
  CHECK(shim::test::terminate_daemon(daemon.pid) == 0);
}

TEST_CASE("Live upgrade: a refused upgrade leaves the old program serving", "[upgrade]") {
  shim::test::SubreaperScope subreaper;
  ShimSandbox sb(runc_shim());
  Daemon daemon = start_daemon(sb, "up2");
  shim::test::SyncClient held(daemon.address);

  // A binary that fails at once: its -info is refused before anything stops.
  shim::Status failed = replace(held, "/bin/false");
  CHECK(failed.code() == shim::Code::kFailedPrecondition);
  CHECK(failed.message() == "/bin/false -info exited with status 1: ");
  CHECK(replace(held, "bin/false").code() == shim::Code::kInvalidArgument);

  // One that takes the exec and refuses the state: the old program comes back.
  ShimRun refused = run_upgrade(sb, test_shim("refusing"), "up2");
  INFO(refused.describe() << "\n" << sb.logs());
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find(test_shim("refusing") +
                         " refused the upgrade state: this test shim "
                         "refuses every upgrade state; the old program serves on") !=
        std::string::npos);
  CHECK(exe_of(daemon.pid) == runc_shim());
  CHECK(connect_pid(held) == static_cast<std::uint32_t>(daemon.pid));

  // And the next upgrade goes through.
  ShimRun next = run_upgrade(sb, test_shim("next"), "up2");
  INFO(next.describe());
  CHECK(next.exit_code == 0);
  CHECK(exe_of(daemon.pid) == test_shim("next"));
  CHECK(connect_pid(held) == static_cast<std::uint32_t>(daemon.pid));
  CHECK(shim::test::terminate_daemon(daemon.pid) == 0);
}

TEST_CASE("Live upgrade: no shim for the id gives a clear error", "[upgrade]") {
  ShimSandbox sb(runc_shim());
  ShimRun run = run_upgrade(sb, test_shim("next"), "nobody-here");
  INFO(run.describe());
  CHECK(run.exit_code == 1);
  CHECK(run.err.rfind("io.containerd.runc.v2: upgrade the shim at unix:///run/containerd/s/", 0) ==
        0);
}

// A binary:// logger stays the shim's child across the swaps: it gets every line the
// container prints (until it is killed), and the new program, which claimed its exit, stops
// it at the delete.
TEST_CASE("Live upgrade: a container's binary logger is carried across four swaps",
          "[upgrade][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  shim::test::RuncE2e s;
  shim::test::TempDir dir("upgrade-logger-");
  const std::string logger = dir.path() + "/logger";
  const std::string logged = dir.path() + "/logged";
  const std::string logger_pid = dir.path() + "/logger.pid";
  {
    std::ofstream script(logger);
    script << "#!/bin/sh\necho $$ > " << logger_pid << "\nexec 5>&-\nexec /bin/cat <&3 >" << logged
           << " 4<&-\n";
  }
  fs::permissions(logger, fs::perms::owner_all);
  // Numbered lines until killed: each echo is one write, so the log ends on a whole line.
  REQUIRE(s.fx.ctr_ok(s.run({"-d", "--log-uri", "binary://" + logger}, "logged",
                            {"/bin/sh", "-c",
                             "i=0; while true; do i=$((i+1)); echo $i; "
                             "if [ $((i % 500)) -eq 0 ]; then sleep 0.1; fi; done"}))
              .ok());
  REQUIRE(s.wait_status("logged", "RUNNING", std::chrono::seconds(20)));
  std::vector<pid_t> shims = shim::test::live_shims(shim::test::our_runc_shim(), s.fx.ns());
  REQUIRE(shims.size() == 1);
  REQUIRE(shim::test::wait_until([&] { return fs::exists(logger_pid); }, std::chrono::seconds(5)));
  pid_t logger_process = 0;
  std::ifstream(logger_pid) >> logger_process;
  REQUIRE(logger_process > 0);

  for (int swap = 1; swap <= 4; ++swap) {
    swap_once(s, "logged", shims[0], swap);
    CHECK(::kill(logger_process, 0) == 0);
  }
  std::error_code error;
  const auto logged_by_last_swap = fs::file_size(logged, error);
  REQUIRE(shim::test::wait_until([&] { return fs::file_size(logged, error) > logged_by_last_swap; },
                                 std::chrono::seconds(10)));  // still logging after the swaps
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "SIGKILL", "logged"}).ok());
  REQUIRE(s.wait_status("logged", "STOPPED", std::chrono::seconds(20)));
  // The delete waits for the logger's exit: the claim made after the swaps delivers it.
  auto removed = s.fx.ctr({"task", "rm", "logged"}, std::chrono::seconds(10));
  INFO(removed.describe());
  REQUIRE(removed.ok());
  CHECK_FALSE(fs::exists(fmt::format("/proc/{}", logger_process)));
  std::ifstream file(logged);
  std::string printed{std::istreambuf_iterator<char>(file), {}};
  REQUIRE(printed.ends_with("\n"));
  const std::size_t last_start = printed.rfind('\n', printed.size() - 2) + 1;
  const int count = std::stoi(printed.substr(last_start));
  std::string expected;
  for (int i = 1; i <= count; ++i) expected += std::to_string(i) + "\n";
  CHECK(printed.size() > logged_by_last_swap);
  CHECK(printed == expected);
  REQUIRE(s.fx.ctr_ok({"container", "rm", "logged"}).ok());
}

namespace {

// `ctr run` attached (its stdout a file; with a terminal, ctr inside util-linux `script`,
// which gives it one): the container prints 40,000 numbered lines over about 10 s while
// the shim swaps six times; ctr gets every line once, in order, and exits 0 with the
// container.
void stream_across_swaps(bool terminal) {
  shim::test::RuncE2e s;
  shim::test::TempDir dir("upgrade-stdout-");
  const std::string out = dir.path() + "/stdout";
  std::vector<std::string> argv = {s.fx.ctr_bin(), "--address", s.fx.grpc_address(), "-n",
                                   s.fx.ns()};
  for (auto& arg :
       s.run(terminal ? std::vector<std::string>{"-t"} : std::vector<std::string>{}, "streaming",
             {"/bin/sh", "-c",
              "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); echo $i; "
              "if [ $((i % 200)) -eq 0 ]; then sleep 0.05; fi; done"})) {
    argv.push_back(arg);
  }
  if (terminal) {
    std::string command = "exec";
    for (const auto& word : argv) command += " '" + word + "'";
    argv = {"/usr/bin/script", "-qec", command, "/dev/null"};
  }
  shim::test::ChildProcess client(argv,
                                  {.stdout_path = out, .stderr_path = dir.path() + "/stderr"});
  REQUIRE(s.wait_status("streaming", "RUNNING", std::chrono::seconds(20)));
  std::vector<pid_t> shims = shim::test::live_shims(shim::test::our_runc_shim(), s.fx.ns());
  REQUIRE(shims.size() == 1);
  const pid_t task = s.task_pid("streaming");

  for (int swap = 1; swap <= 6; ++swap) {
    swap_once(s, "streaming", shims[0], swap);
    CHECK(s.task_pid("streaming") == task);
  }
  std::error_code error;
  const auto printed_by_last_swap = fs::file_size(out, error);
  std::optional<int> exited = client.wait_for(std::chrono::seconds(60));
  REQUIRE(exited.has_value());
  CHECK(*exited == 0);
  std::ifstream file(out);
  std::string printed{std::istreambuf_iterator<char>(file), {}};
  const std::size_t printed_in_all = printed.size();
  // Line disciplines on the way (the container's pty, script's) add CRs: not ours to count.
  if (terminal) std::erase(printed, '\r');
  // script, its stdin at EOF at once, sends a NUL down the terminal, which the container's
  // line discipline echoes as "^@" before the first line: input, not the container's output.
  if (terminal && printed.starts_with("^@")) printed.erase(0, 2);
  std::string expected;
  for (int i = 1; i <= 40000; ++i) expected += std::to_string(i) + "\n";
  // Still streaming when the last swap was done: the copies crossed the swaps mid-stream.
  CHECK(printed_by_last_swap < printed_in_all);
  INFO("printed begins " << printed.substr(0, 40) << " and ends "
                         << printed.substr(printed.size() > 40 ? printed.size() - 40 : 0));
  REQUIRE(printed.size() == expected.size());
  CHECK(printed == expected);
  REQUIRE(s.fx.ctr_ok({"container", "rm", "streaming"}).ok());
}

}  // namespace

TEST_CASE("Live upgrade: a container streaming stdout is carried across six swaps",
          "[upgrade][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  stream_across_swaps(false);
}

TEST_CASE("Live upgrade: a container streaming to a terminal is carried across six swaps",
          "[upgrade][runc-e2e][terminal]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (::access("/usr/bin/script", X_OK) != 0) LIBSHIM_SKIP("util-linux script is missing");
  stream_across_swaps(true);
}

// Under containerd 1.6 and runc: `ctr run --null-io` (not detached: containerd's Wait,
// and so the shim's, stays in flight through every swap) while the shim swaps six times
// between two builds; the container is paused across one swap. The task keeps its pid,
// the Wait is answered once, with the exit that came after the last swap, and containerd
// sees each task event once, in order.
TEST_CASE("Live upgrade: a container without stdio is carried across six swaps",
          "[upgrade][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  shim::test::RuncE2e s;
  auto events = s.fx.subscribe_events();
  std::vector<std::string> argv = {s.fx.ctr_bin(), "--address", s.fx.grpc_address(), "-n",
                                   s.fx.ns()};
  for (auto& arg : s.run({"--null-io"}, "carried", {"/bin/sleep", "600"})) argv.push_back(arg);
  shim::test::ChildProcess waiter(argv, {});
  REQUIRE(s.wait_status("carried", "RUNNING", std::chrono::seconds(20)));
  std::vector<pid_t> shims = shim::test::live_shims(shim::test::our_runc_shim(), s.fx.ns());
  REQUIRE(shims.size() == 1);
  const pid_t task = s.task_pid("carried");
  REQUIRE(task > 0);

  for (int swap = 1; swap <= 6; ++swap) {
    if (swap == 3) REQUIRE(s.fx.ctr_ok({"task", "pause", "carried"}).ok());
    const std::string binary = swap_once(s, "carried", shims[0], swap);
    CHECK(shim::test::live_shims(binary, s.fx.ns()) == shims);
    CHECK(s.task_status("carried") == (swap == 3 ? "PAUSED" : "RUNNING"));
    CHECK(s.task_pid("carried") == task);
    if (swap == 3) REQUIRE(s.fx.ctr_ok({"task", "resume", "carried"}).ok());
    CHECK(waiter.running());
  }
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "SIGKILL", "carried"}).ok());
  std::optional<int> waited = waiter.wait_for(std::chrono::seconds(20));
  REQUIRE(waited.has_value());
  // ctr run exits with the task's status (the Wait's answer), having deleted the task.
  CHECK(*waited == 137);
  CHECK(s.task_status("carried").empty());
  REQUIRE(s.fx.ctr_ok({"container", "rm", "carried"}).ok());
  REQUIRE(shim::test::wait_no_live_shims(runc_shim(), s.fx.ns(), std::chrono::seconds(10)));
  const std::vector<std::string> expected = {"/tasks/create",  "/tasks/start", "/tasks/paused",
                                             "/tasks/resumed", "/tasks/exit",  "/tasks/delete"};
  for (int i = 0; i < 50 && shim::test::event_topics_for(*events, "carried") != expected; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(shim::test::event_topics_for(*events, "carried") == expected);
}

namespace {

// `binary -address ADDR [-namespace NS] upgrade-all`, as an operator runs it on a node.
ShimRun run_upgrade_all(const shim::test::RuncE2e& s, const std::string& binary,
                        const std::string& ns = "") {
  std::vector<std::string> argv = {binary, "-address", s.fx.grpc_address()};
  if (!ns.empty()) argv.insert(argv.end(), {"-namespace", ns});
  argv.push_back("upgrade-all");
  return shim::test::run_shim(argv, shim::test::clean_env({}), "", "/", std::chrono::seconds(60));
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

// A node's upgrade: the new build installed under the runtime's file name (here a copy of
// containerd-shim-upgrade-next-v1 named containerd-shim-runc-v2), then one `upgrade-all`
// for containerd's socket swaps every shim of that name, each container keeping its task;
// run again, it finds them all current; the first build's `upgrade-all` swaps them back.
TEST_CASE("Live upgrade: upgrade-all swaps every shim of the runtime for one containerd",
          "[upgrade][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  shim::test::RuncE2e s;
  shim::test::TempDir dir("upgrade-all-");
  fs::copy_file(test_shim("next"), dir.path() + "/containerd-shim-runc-v2");
  const std::string installed = fs::canonical(dir.path() + "/containerd-shim-runc-v2").string();
  const std::string first = fs::canonical(runc_shim()).string();
  const std::vector<std::string> ids = {"one", "two", "three"};
  std::vector<pid_t> tasks;
  for (const auto& id : ids) {
    REQUIRE(s.fx.ctr_ok(s.run({"-d", "--null-io"}, id, {"/bin/sleep", "600"})).ok());
    REQUIRE(s.wait_status(id, "RUNNING", std::chrono::seconds(20)));
    tasks.push_back(s.task_pid(id));
  }
  std::vector<pid_t> shims = shim::test::live_shims(shim::test::our_runc_shim(), s.fx.ns());
  REQUIRE(shims.size() == ids.size());

  ShimRun other = run_upgrade_all(s, installed, "no-such-namespace");
  INFO(other.describe());
  CHECK(other.exit_code == 0);
  CHECK(other.out ==
        fmt::format("upgrade-all: 0 upgraded, 0 already running {}, 0 not upgraded\n", installed));

  ShimRun swapped = run_upgrade_all(s, installed);
  INFO(swapped.describe());
  CHECK(swapped.exit_code == 0);
  CHECK(count_of(swapped.out, fmt::format(" now runs {} (", installed)) == ids.size());
  CHECK(swapped.out.find(fmt::format("upgrade-all: 3 upgraded, 0 already running {}, 0 not "
                                     "upgraded\n",
                                     installed)) != std::string::npos);
  CHECK(shim::test::live_shims(installed, s.fx.ns()) == shims);

  ShimRun again = run_upgrade_all(s, installed);
  INFO(again.describe());
  CHECK(again.exit_code == 0);
  CHECK(count_of(again.out, fmt::format(" already runs {}\n", installed)) == ids.size());

  ShimRun back = run_upgrade_all(s, first);
  INFO(back.describe());
  CHECK(back.exit_code == 0);
  CHECK(count_of(back.out, fmt::format(" now runs {} (", first)) == ids.size());
  CHECK(shim::test::live_shims(first, s.fx.ns()) == shims);

  for (std::size_t i = 0; i < ids.size(); ++i) {
    CHECK(s.task_status(ids[i]) == "RUNNING");
    CHECK(s.task_pid(ids[i]) == tasks[i]);
    REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "SIGKILL", ids[i]}).ok());
    REQUIRE(s.wait_status(ids[i], "STOPPED", std::chrono::seconds(10)));
    REQUIRE(s.fx.ctr_ok({"task", "rm", ids[i]}).ok());
    REQUIRE(s.fx.ctr_ok({"container", "rm", ids[i]}).ok());
  }
  REQUIRE(shim::test::wait_no_live_shims(first, s.fx.ns(), std::chrono::seconds(10)));
}
