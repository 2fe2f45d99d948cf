// The vendor project of tests/consumer (and the tutorial built with its own CMake lines),
// built outside the tree against an installed libshim (temp prefix or the .debs) and
// installed, run under real containerd: `ctr run --rm` (exit code, output, the agent's
// environment), `ctr run -d` + `ctr task exec`, kill, and the events containerd saw, in
// order; the crun shim also pause, resume and ps, with crun.
//
// Hidden ([.consumer]): ctest does not register it, because the binaries only exist once
// tests/packaging/run.sh has installed libshim and built the consumer. That script runs
//   LIBSHIM_CONSUMER_SHIMS=<a>:<b> LIBSHIM_CONSUMER_GRPC_SHIMS=<c>
//   LIBSHIM_CONSUMER_CRUN_SHIMS=<d> integration_tests '[consumer]'
// under containerd 1.6 (the system's) and 2.1 (LIBSHIM_CONTAINERD_BIN & co., as the
// multi-version runs; not tagged [multi-version], so ctest registers no copies of it).
// A run without any binary named fails: it must not pass vacuously.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/containerd_fixture.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using shim::test::PrivateContainerd;

std::vector<std::string> paths_from_env(const char* name) {
  std::vector<std::string> paths;
  const char* value = std::getenv(name);
  std::istringstream in(value != nullptr ? value : "");
  for (std::string path; std::getline(in, path, ':');) {
    if (!path.empty()) paths.push_back(path);
  }
  return paths;
}

std::vector<std::string> run_args(const PrivateContainerd& fx, const std::string& shim, bool detach,
                                  const std::string& rootfs, const std::string& id,
                                  const std::vector<std::string>& command) {
  std::vector<std::string> args = {"run", detach ? "-d" : "--rm", "--runtime", shim};
  for (const auto& flag : fx.run_flags(/*with_runc_root=*/false)) args.push_back(flag);
  args.insert(args.end(), {"--rootfs", rootfs, id});
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

// Index of the first event line with `topic` that contains every one of `parts`.
std::ptrdiff_t event_at(const std::vector<std::string>& lines, const std::string& topic,
                        const std::vector<std::string>& parts) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(" " + topic + " ") == std::string::npos) continue;
    if (std::all_of(parts.begin(), parts.end(),
                    [&](const std::string& p) { return lines[i].find(p) != std::string::npos; })) {
      return static_cast<std::ptrdiff_t>(i);
    }
  }
  return -1;
}

void check_shim(PrivateContainerd& fx, const std::string& rootfs, const std::string& shim,
                bool grpc, const std::string& tag) {
  INFO("shim " << shim << " (containerd " << fx.version().major << "." << fx.version().minor
               << ")");
  REQUIRE(fs::is_regular_file(shim));
  auto events = fx.subscribe_events();

  // ctr run --rm: output, exit code and the environment the agent added to the init.
  const std::string id = "run-" + tag;
  auto run = fx.ctr(run_args(fx, shim, false, rootfs, id,
                             {"/bin/sh", "-c", "echo \"agent=$CONSUMER_AGENT\"; exit 3"}),
                    30s);
  INFO(run.describe() << "\nlog:\n" << fx.log_tail());
  CHECK(run.exit_code == 3);
  CHECK(run.out == (grpc ? "agent={\"echo\":\"" + id + "\"}\n" : "agent=\n"));
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"container_id\":\"" + id + "\""}, 10s));
  {
    auto lines = events->lines();
    INFO("events:\n" << events->text());
    const std::string cid = "\"container_id\":\"" + id + "\"";
    auto create = event_at(lines, "/tasks/create", {cid});
    auto start = event_at(lines, "/tasks/start", {cid});
    auto exit = event_at(lines, "/tasks/exit", {cid, "\"id\":\"" + id + "\"", "\"exit_status\":3"});
    auto del = event_at(lines, "/tasks/delete", {cid, "\"exit_status\":3"});
    CHECK(create >= 0);
    CHECK(start > create);
    CHECK(exit > start);
    CHECK(del > exit);
  }

  // ctr run -d, then an exec with its own output and exit code, then kill.
  const std::string detached = "detached-" + tag;
  fx.ctr_ok(run_args(fx, shim, true, rootfs, detached, {"/bin/sleep", "600"}));
  std::vector<std::string> exec = {"task", "exec", "--exec-id", "e1"};
  for (const auto& flag : fx.run_flags(false)) exec.push_back(flag);
  exec.insert(exec.end(), {detached, "/bin/sh", "-c", "echo exec; exit 5"});
  auto exec_run = fx.ctr(exec, 30s);
  INFO(exec_run.describe() << "\nlog:\n" << fx.log_tail());
  CHECK(exec_run.exit_code == 5);
  CHECK(exec_run.out == "exec\n");
  fx.ctr_ok({"task", "kill", "-s", "KILL", detached});
  const std::string dcid = "\"container_id\":\"" + detached + "\"";
  REQUIRE(events->wait_for_line({"/tasks/exit", dcid, "\"id\":\"" + detached + "\""}, 10s));
  fx.ctr_ok({"task", "rm", detached});
  fx.ctr_ok({"container", "rm", detached});
  REQUIRE(events->wait_for_line({"/tasks/delete", dcid}, 10s));
  auto lines = events->lines();
  INFO("events:\n" << events->text());
  auto start = event_at(lines, "/tasks/start", {dcid});
  auto added = event_at(lines, "/tasks/exec-added", {dcid, "\"exec_id\":\"e1\""});
  auto started = event_at(lines, "/tasks/exec-started", {dcid, "\"exec_id\":\"e1\""});
  auto exec_exit = event_at(lines, "/tasks/exit", {dcid, "\"id\":\"e1\"", "\"exit_status\":5"});
  auto init_exit =
      event_at(lines, "/tasks/exit", {dcid, "\"id\":\"" + detached + "\"", "\"exit_status\":137"});
  auto del = event_at(lines, "/tasks/delete", {dcid, "\"exit_status\":137"});
  CHECK(start >= 0);
  CHECK(added > start);
  CHECK(started > added);
  CHECK(exec_exit > started);
  CHECK(init_exit > exec_exit);
  CHECK(del > init_exit);
}

// The crun shim's own calls beyond check_shim's: pause, resume, ps.
void check_crun_extras(PrivateContainerd& fx, const std::string& rootfs, const std::string& shim,
                       const std::string& tag) {
  const std::string id = "crun-" + tag;
  fx.ctr_ok(run_args(fx, shim, true, rootfs, id, {"/bin/sleep", "600"}));
  fx.ctr_ok({"task", "pause", id});
  CHECK(fx.ctr_ok({"task", "ls"}).out.find("PAUSED") != std::string::npos);
  fx.ctr_ok({"task", "resume", id});
  auto ps = fx.ctr_ok({"task", "ps", id});
  CHECK(std::count(ps.out.begin(), ps.out.end(), '\n') == 2);  // the header and the init
  fx.ctr_ok({"task", "kill", "-s", "KILL", id});
  for (int i = 0; i < 100 && fx.ctr_ok({"task", "ls"}).out.find("STOPPED") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(100ms);
  }
  fx.ctr_ok({"task", "rm", id});
  fx.ctr_ok({"container", "rm", id});
}

// A dir for the front of containerd's PATH whose `crun` is Debian's crun through
// tests/support/crun-cgroup-v1.sh (this host's hybrid cgroups, see that script).
std::string crun_path_dir(const std::string& dir) {
  fs::create_directories(dir);
  const std::string crun = dir + "/crun";
  std::ofstream(crun) << "#!/bin/sh\nLIBSHIM_CRUN=/usr/bin/crun exec " << LIBSHIM_SOURCE_DIR
                      << "/tests/support/crun-cgroup-v1.sh \"$@\"\n";
  fs::permissions(crun, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  return dir;
}

}  // namespace

TEST_CASE("consumer shim (built against the installed libshim) under containerd", "[.consumer]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  const auto plain = paths_from_env("LIBSHIM_CONSUMER_SHIMS");
  const auto grpc = paths_from_env("LIBSHIM_CONSUMER_GRPC_SHIMS");
  const auto crun = paths_from_env("LIBSHIM_CONSUMER_CRUN_SHIMS");
  REQUIRE(plain.size() + grpc.size() + crun.size() > 0);

  shim::test::TempDir bin("crun-path-");
  shim::test::ContainerdOptions options;
  options.path_prepend = {crun_path_dir(bin.sub("bin"))};
  PrivateContainerd fx(options);
  const std::string rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs);
  int n = 0;
  for (const auto& shim : plain) check_shim(fx, rootfs, shim, false, std::to_string(n++));
  for (const auto& shim : grpc) check_shim(fx, rootfs, shim, true, std::to_string(n++));
  for (const auto& shim : crun) {
    check_shim(fx, rootfs, shim, false, std::to_string(n));
    check_crun_extras(fx, rootfs, shim, std::to_string(n++));
  }
  CHECK(fx.ctr_ok({"containers", "ls", "-q"}).out.empty());
}
