// OomWatcher: v2 inotify watching and the synchronous check() against fake trees, and
// real cgroup v1 OOM kills on this host (root): a forked child allocates 64 MiB in an
// 8 MiB memory cgroup, the watcher reports it once, whichever of the eventfd wake-up and
// the child's death the shim sees first.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <catch2/catch.hpp>

#include "cgroup_test_helpers.h"
#include "linux/cgroup_file.h"
#include "linux/cgroup_metrics.h"
#include "shim/clock.h"
#include "shim/linux/cgroup.h"
#include "shim/linux/oom_watcher.h"
#include "shim/logger.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "unit/linux/oom_cgroup_child.h"

namespace {

using namespace std::chrono_literals;
using namespace cgroup_test;
using oom_test::Allocator;
using oom_test::kLimit;
using oom_test::TestCgroups;
using shim::CgroupPaths;
using shim::CgroupVersion;
using shim::OomWatcher;

shim::Logger quiet_logger() {
  static shim::SystemClock clock;
  return shim::Logger(std::make_shared<shim::CallbackLogSink>([](std::string_view) {}), clock);
}

// Runs the loop until `done()` holds or `limit` has passed; whether `done()` held.
bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    io.restart();
    if (io.run_for(10ms) == 0) std::this_thread::sleep_for(1ms);
  }
  return true;
}

void run_for(boost::asio::io_context& io, std::chrono::milliseconds span) {
  run_until(
      io, [] { return false; }, span);
}

int open_fd_count() {
  int count = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) ++count;
  }
  return count;
}

struct Recorder {
  std::vector<std::string> ids;
  OomWatcher::OnOom callback() {
    return [this](const std::string& id) { ids.push_back(id); };
  }
};

CgroupPaths fake_v2(const shim::test::TempDir& tmp) {
  CgroupPaths paths;
  paths.version = CgroupVersion::kV2;
  paths.unified = tmp.sub("ctr");
  write(paths.unified + "/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  write(paths.unified + "/cgroup.events", "populated 1\nfrozen 0\n");
  return paths;
}

CgroupPaths fake_v1(const shim::test::TempDir& tmp, const std::string& oom_control) {
  CgroupPaths paths;
  paths.version = CgroupVersion::kV1;
  paths.controllers["memory"] = tmp.sub("memory");
  write(tmp.sub("memory") + "/memory.oom_control", oom_control);
  write(tmp.sub("memory") + "/cgroup.event_control", "");  // a plain file: registers nothing
  return paths;
}

}  // namespace

TEST_CASE("oom_kill counters are read from memory.oom_control and memory.events", "[cgroup]") {
  shim::test::TempDir tmp("oomc-");
  CgroupPaths v1 = fake_v1(tmp, "oom_kill_disable 0\nunder_oom 1\noom_kill 4\n");
  CHECK(shim::read_oom_kill_count(v1) == 4u);
  CHECK(shim::read_under_oom(v1));
  write(tmp.sub("memory") + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
  CHECK_FALSE(shim::read_oom_kill_count(v1).has_value());  // kernels before 4.13
  CHECK_FALSE(shim::read_under_oom(v1));

  CgroupPaths v2 = fake_v2(tmp);
  CHECK(shim::read_oom_kill_count(v2) == 0u);
  write(v2.unified + "/memory.events", "oom 2\noom_kill 2\n");
  CHECK(shim::read_oom_kill_count(v2) == 2u);
  CHECK_FALSE(shim::read_under_oom(v2));

  CgroupPaths none;
  CHECK_FALSE(shim::read_oom_kill_count(none).has_value());
}

TEST_CASE("v2 watcher reports oom_kill increases from inotify", "[cgroup]") {
  shim::test::TempDir tmp("oom2-");
  CgroupPaths paths = fake_v2(tmp);
  boost::asio::io_context io;
  Recorder oom;
  OomWatcher watcher(io.get_executor(), quiet_logger(), oom.callback());
  REQUIRE(watcher.add("c1", paths).ok());
  CHECK(watcher.monitoring("c1"));

  write(paths.unified + "/memory.events", "low 0\nhigh 0\nmax 3\noom 0\noom_kill 0\n");
  run_for(io, 100ms);
  CHECK(oom.ids.empty());  // a change without a kill

  write(paths.unified + "/memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
  REQUIRE(run_until(
      io, [&] { return !oom.ids.empty(); }, 3000ms));
  CHECK(oom.ids == std::vector<std::string>{"c1"});

  // The init was reaped before the loop saw the next change: check() reports now, the
  // inotify wake-up afterwards finds nothing new.
  write(paths.unified + "/memory.events", "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\n");
  watcher.check("c1");
  CHECK(oom.ids.size() == 2);
  run_for(io, 100ms);
  CHECK(oom.ids.size() == 2);

  // The cgroup empties: one last read, then the fd is closed.
  write(paths.unified + "/cgroup.events", "populated 0\nfrozen 0\n");
  REQUIRE(run_until(
      io, [&] { return !watcher.monitoring("c1"); }, 3000ms));
  CHECK(watcher.contains("c1"));
  CHECK(oom.ids.size() == 2);
}

TEST_CASE("v1 check() reports a signalled kill once, and not the kills before add()", "[cgroup]") {
  shim::test::TempDir tmp("oom1-");
  CgroupPaths paths = fake_v1(tmp, "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
  boost::asio::io_context io;
  Recorder oom;
  OomWatcher watcher(io.get_executor(), quiet_logger(), oom.callback());
  REQUIRE(watcher.add("c1", paths).ok());
  std::string registration;
  REQUIRE(shim::go_read_file(tmp.sub("memory") + "/cgroup.event_control", &registration).ok());
  CHECK(shim::split_fields(registration).size() == 2);  // "<eventfd> <control fd>"

  int eventfd = std::stoi(std::string(shim::split_fields(registration).at(0)));

  watcher.check("c1");
  CHECK(oom.ids.empty());
  write(tmp.sub("memory") + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 6\n");
  // The kernel signals the eventfd before it kills; without that wake-up check() does not
  // even read the counter (the exit path stays cheap).
  watcher.check("c1");
  CHECK(oom.ids.empty());
  std::uint64_t one = 1;
  REQUIRE(::write(eventfd, &one, sizeof one) == sizeof one);
  watcher.check("c1");
  CHECK(oom.ids == std::vector<std::string>{"c1"});
  watcher.check("c1");
  run_for(io, 50ms);
  CHECK(oom.ids.size() == 1);
  watcher.check("unknown");  // ignored
  CHECK(oom.ids.size() == 1);
}

TEST_CASE("OomWatcher add errors and fd ownership", "[cgroup]") {
  shim::test::TempDir tmp("oome-");
  boost::asio::io_context io;
  Recorder oom;
  { boost::asio::posix::stream_descriptor warm_up(io); }  // the reactor's own fds open now
  int before = open_fd_count();
  {
    OomWatcher watcher(io.get_executor(), quiet_logger(), oom.callback());
    CgroupPaths no_memory;
    no_memory.controllers["cpu"] = tmp.sub("cpu");
    CHECK(watcher.add("a", no_memory).message() ==
          "cgroups: memory cgroup not supported on this system");

    CgroupPaths v2;
    v2.version = CgroupVersion::kV2;
    v2.unified = tmp.sub("missing");
    shim::Status status = watcher.add("b", v2);
    CHECK(status.message().starts_with("failed to add inotify watch for \"" + tmp.sub("missing") +
                                       "/memory.events\": no such file"));
    CHECK_FALSE(watcher.contains("b"));
    CHECK(open_fd_count() == before);

    REQUIRE(watcher.add("c", fake_v2(tmp)).ok());
    REQUIRE(watcher.add("d", fake_v1(tmp, "oom_kill 0\n")).ok());
    CHECK(open_fd_count() == before + 2);
    watcher.remove("c");
    CHECK(open_fd_count() == before + 1);
    CHECK(watcher.size() == 1);
  }
  CHECK(open_fd_count() == before);  // the destructor closed "d"
  run_for(io, 20ms);                 // aborted waits run without touching the watcher
  CHECK(oom.ids.empty());
}

namespace {

bool killed_by_sigkill(int status) {
  return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace

TEST_CASE("real v1 cgroup: stats, and an OOM kill reported once before the exit", "[cgroup]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root to create memory cgroups");
  TestCgroups cgroups;
  if (!cgroups.create()) LIBSHIM_SKIP("no usable cgroup v1 memory controller on this host");
  Allocator child;
  cgroups.limit_and_move(child.pid());
  REQUIRE(child.touch_a_little());

  CgroupPaths paths;
  REQUIRE(shim::load_cgroup(shim::CgroupFs{}, CgroupVersion::kV1, child.pid(), &paths).ok());
  CHECK(paths.dir("memory") == cgroups.memory());
  shim::cgroups_v1::Metrics metrics;
  REQUIRE(shim::collect_v1_metrics(shim::CgroupFs{}, paths, &metrics).ok());
  CHECK(metrics.memory().usage().usage() > 0);
  CHECK(metrics.memory().usage().limit() == kLimit);
  CHECK(metrics.memory_oom_control().oom_kill() == 0);
  if (!cgroups.pids().empty()) {
    CHECK(paths.dir("pids") == cgroups.pids());
    CHECK(metrics.pids().current() >= 1);
  } else {
    WARN("no pids controller: pids.current not checked");
  }

  boost::asio::io_context io;
  Recorder oom;
  OomWatcher watcher(io.get_executor(), quiet_logger(), oom.callback());
  REQUIRE(watcher.add("ctr", paths).ok());
  std::optional<std::uint64_t> baseline = shim::read_oom_kill_count(paths);
  REQUIRE(baseline.has_value());  // Linux >= 4.13

  SECTION("the eventfd wake-up is seen first") {
    child.allocate();
    REQUIRE(run_until(
        io, [&] { return !oom.ids.empty(); }, 10000ms));
    CHECK(oom.ids == std::vector<std::string>{"ctr"});
    CHECK(killed_by_sigkill(child.wait(10000ms)));
    CHECK(shim::read_oom_kill_count(paths) == *baseline + 1);
    watcher.check("ctr");  // what on_reaped does: nothing new to report
    CHECK(oom.ids.size() == 1);
  }
  SECTION("the child's death is seen first: check() reports before the loop runs") {
    child.allocate();
    CHECK(killed_by_sigkill(child.wait(10000ms)));
    CHECK(oom.ids.empty());
    watcher.check("ctr");
    CHECK(oom.ids == std::vector<std::string>{"ctr"});
    run_for(io, 200ms);  // the pending wake-up was consumed by check()
    CHECK(oom.ids.size() == 1);
  }
  CHECK_FALSE(shim::read_under_oom(paths));

  // Removing the cgroup wakes its eventfds: no report, the watch just ends.
  REQUIRE(watcher.add("gone", paths).ok());
  std::size_t reports = oom.ids.size();
  REQUIRE(cgroups.remove());
  CHECK(run_until(
      io, [&] { return !watcher.monitoring("gone") && !watcher.monitoring("ctr"); }, 5000ms));
  CHECK(oom.ids.size() == reports);
  watcher.check("gone");
  CHECK(oom.ids.size() == reports);
}
