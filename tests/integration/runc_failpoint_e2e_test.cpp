// A runc that fails (tests/support/runc-failpoint.sh as BinaryName): it exits 1 with a
// log.json error, dies by SIGKILL, or hangs past the call's deadline (ctr --timeout 3s:
// containerd passes the deadline on, and the shim kills the runtime at it, as go-runc's
// CommandContext does), in create, start, exec, kill, pause and delete.
// Each RPC must answer a clear error, the shim must keep serving the other container of
// its group, and once the failed container is removed nothing may be left: no process,
// mount, cgroup, or shim fd. Prints "LIBSHIM-FAULT: runc-failpoint ..." per case.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <fstream>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::size_t count_fds(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(fmt::format("/proc/{}/fd", pid))) ++n;
  return n;
}

// Mounts whose mount point contains `part` (the container's rootfs under its bundle).
std::size_t mounts_with(const std::string& part) {
  std::ifstream in("/proc/self/mountinfo");
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(part) != std::string::npos;
  return n;
}

// cgroup dirs of the container (ctr puts runc's cgroup at /<ns>/<id>), any hierarchy.
std::vector<std::string> cgroups_of(const std::string& ns, const std::string& id) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& hierarchy : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    fs::path dir = hierarchy.path() / ns / id;
    if (fs::exists(dir, ec)) found.push_back(dir.string());
  }
  if (fs::exists(fs::path("/sys/fs/cgroup") / ns / id, ec)) found.push_back("/sys/fs/cgroup/" + ns + "/" + id);
  return found;
}

struct Case {
  std::string command;
  std::string mode;
};

struct Failpoint {
  RuncE2e& s;
  std::string wrapper = s.fx.dir() + "/runc-failpoint.sh";
  std::string group = fmt::format("io.containerd.runc.v2.group={}-g", s.fx.ns());

  explicit Failpoint(RuncE2e& setup) : s(setup) {
    fs::copy_file(fs::path(LIBSHIM_SOURCE_DIR) / "tests/support/runc-failpoint.sh", wrapper);
    fs::permissions(wrapper, fs::perms::owner_all);
  }
  // Only for container `id`: the control container's calls must go through.
  void arm(const Case& c, const std::string& id, const std::string& arg = "x") const {
    std::ofstream(s.fx.dir() + "/failpoint") << c.command << " " << c.mode << " " << id << " " << arg << "\n";
  }
  void disarm() const { ::unlink((s.fx.dir() + "/failpoint").c_str()); }

  CommandResult run(const std::string& id, std::vector<std::string> prefix = {}) const {
    auto args = s.run({"-d", "--runc-binary", wrapper, "--annotation", group}, id, {"/bin/sleep", "600"});
    prefix.insert(prefix.end(), args.begin(), args.end());
    return s.fx.ctr(prefix);
  }

  // Creates container `id` unless the case fails its creation, then arms the failpoint.
  void prepare(const Case& c, const std::string& id) const {
    if (c.command != "create" && c.command != "start") {
      REQUIRE(run(id).ok());
      REQUIRE(s.wait_status(id, "RUNNING", 10s));
      if (c.command == "delete") {
        REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", id}).ok());
        REQUIRE(s.wait_status(id, "STOPPED", 10s));
      }
    }
    arm(c, id);
  }

  // The RPC the case names, on container `id` (no assertions: it may run on a thread).
  CommandResult fire(const Case& c, const std::string& id) const {
    // Only a hang needs a deadline; containerd passes ctr's on to the shim.
    std::vector<std::string> prefix;
    if (c.mode == "hang") prefix = {"--timeout", "3s"};
    auto with = [&](std::vector<std::string> args) {
      args.insert(args.begin(), prefix.begin(), prefix.end());
      return s.fx.ctr(args);
    };
    if (c.command == "create" || c.command == "start") return run(id, prefix);
    if (c.command == "exec") return with({"task", "exec", "--exec-id", "fx", id, "/bin/true"});
    if (c.command == "kill") return with({"task", "kill", "-s", "TERM", id});
    if (c.command == "pause") return with({"task", "pause", id});
    return with({"task", "rm", id});
  }

  // What an operator does after a failure: remove the task and the container.
  void remove(const std::string& id) const {
    s.fx.ctr({"task", "rm", "-f", id});
    for (int attempt = 0; attempt < 50 && !s.task_status(id).empty(); ++attempt) {
      std::this_thread::sleep_for(100ms);
      s.fx.ctr({"task", "rm", "-f", id});
    }
    s.fx.ctr({"container", "rm", id});
  }
};

TEST_CASE("fault: a failing runc in create, start, exec, kill, pause and delete",
          "[fault][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  Failpoint fp(s);
  const std::string& ns = s.fx.ns();
  // The control container shares the shim (same group) with every failing one.
  REQUIRE(fp.run("ctl").ok());
  REQUIRE(s.wait_status("ctl", "RUNNING", 10s));
  auto shims = live_shims(our_runc_shim(), ns);
  REQUIRE(shims.size() == 1);
  pid_t shim = shims[0];
  REQUIRE(s.fx.ctr_ok({"task", "exec", "--exec-id", "warm", "ctl", "/bin/true"}).ok());
  std::size_t fds_before = count_fds(shim);

  int failures_answered = 0, leftovers = 0, control_failures = 0, cases = 0;
  for (const char* command : {"create", "start", "exec", "kill", "pause", "delete"}) {
    for (const char* mode : {"exit1", "sigkill", "hang"}) {
      Case c{command, mode};
      std::string id = fmt::format("f-{}-{}", command, mode);
      INFO("case " << command << " " << mode);
      ++cases;
      fp.prepare(c, id);
      auto began = std::chrono::steady_clock::now();
      auto pending = std::async(std::launch::async, [&] { return fp.fire(c, id); });
      // The shim serves its other container, also while a runtime call hangs.
      if (c.mode == "hang") std::this_thread::sleep_for(1500ms);
      auto exec = s.fx.ctr({"task", "exec", "--exec-id", fmt::format("ctl-{}-{}", command, mode), "ctl",
                            "/bin/echo", "alive"});
      CHECK(exec.out == "alive\n");
      control_failures += exec.out != "alive\n";
      auto r = pending.get();
      auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
      fp.disarm();
      INFO(r.describe());
      // A clear error: the RPC failed, and says why (runc's log.json text, the killed
      // runtime, or the deadline), in time.
      std::string why = c.mode == "exit1"     ? fmt::format("failpoint: {} refused", command)
                        // 128 + SIGKILL, as go-runc reports a signalled runtime too
                        : c.mode == "sigkill" ? "did not terminate successfully: exit status 137"
                                              : "deadline exceeded";
      bool answered = r.exit_code != 0 && r.err.find(why) != std::string::npos && took < 20s;
      CHECK(answered);
      failures_answered += answered;
      fp.remove(id);
      // Nothing left behind by the failed container.
      CHECK(s.task_status(id).empty());
      std::string bundle = s.fx.bundle_dir(id);
      std::size_t mounts = mounts_with(bundle + "/rootfs");
      auto cgroups = cgroups_of(ns, id);
      std::size_t fds = 0;
      for (int i = 0; i < 50 && (fds = count_fds(shim)) > fds_before; ++i) std::this_thread::sleep_for(100ms);
      auto wrappers = run_command({"pgrep", "-f", fp.wrapper + "|sleep 3601"});
      CHECK(mounts == 0);
      CHECK(cgroups.empty());
      CHECK(fds <= fds_before);
      CHECK(wrappers.out.empty());
      leftovers += (mounts != 0) + (!cgroups.empty()) + (fds > fds_before) + (!wrappers.out.empty());
    }
  }
  CHECK(live_shims(our_runc_shim(), ns) == std::vector<pid_t>{shim});
  WARN(fmt::format("LIBSHIM-FAULT: runc-failpoint cases={} clear_errors={} control_failures={} "
                   "leftovers={}",
                   cases, failures_answered, control_failures, leftovers));
}

// The bundle dirs of the namespace on a 4 MiB tmpfs, which the failpoint fills up, or
// remounts read-only, right before `runc create`: the shim's start and containerd's own
// writes went through, runc's pid file and the rest cannot.
TEST_CASE("fault: the bundle's filesystem full or read-only at create", "[fault][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  Failpoint fp(s);
  const std::string& ns = s.fx.ns();
  std::string bundles = s.fx.state_dir() + "/io.containerd.runtime.v2.task/" + ns;
  fs::create_directories(bundles);
  REQUIRE(run_command({"mount", "-t", "tmpfs", "-o", "size=4m,mode=0711", "libshim-bundles", bundles}).ok());
  int half_created = 0, unclear = 0;
  for (const char* mode : {"fill", "rofs"}) {
    std::string id = fmt::format("fs-{}", mode);
    INFO("mode " << mode);
    std::string arg = std::string(mode) == "fill" ? bundles + "/filler" : bundles;
    fp.arm(Case{"create", mode}, id, arg);
    auto r = fp.run(id);
    fp.disarm();
    INFO(r.describe());
    std::string why = std::string(mode) == "fill" ? "no space left on device" : "read-only file system";
    bool clear = r.exit_code != 0 && r.err.find("OCI runtime create failed") != std::string::npos &&
                 r.err.find(why) != std::string::npos;
    CHECK(clear);
    unclear += !clear;
    // The filesystem comes back; nothing of the failed create may remain.
    if (std::string(mode) == "fill") ::unlink(arg.c_str());
    else REQUIRE(run_command({"mount", "-o", "remount,rw", bundles}).ok());
    auto runc = run_command({"runc", "--root", s.fx.runc_root() + "/" + ns, "list", "-q"});
    bool runc_knows = runc.out.find(id) != std::string::npos;
    std::size_t mounts = mounts_with(s.fx.bundle_dir(id) + "/rootfs");
    auto cgroups = cgroups_of(ns, id);
    CHECK(s.task_status(id).empty());
    CHECK(!runc_knows);
    CHECK(mounts == 0);
    CHECK(cgroups.empty());
    half_created += !s.task_status(id).empty() + runc_knows + (mounts != 0) + !cgroups.empty();
    s.fx.ctr({"container", "rm", id});
    // And the shim's next container works.
    std::string next = fmt::format("fs-{}-after", mode);
    CHECK(fp.run(next).ok());
    CHECK(s.fx.ctr({"task", "exec", "--exec-id", "x", next, "/bin/true"}).ok());
    fp.remove(next);
  }
  WARN(fmt::format("LIBSHIM-FAULT: bundle-fs cases=2 unclear_errors={} half_created={}", unclear, half_created));
}

}  // namespace
}  // namespace shim::test
