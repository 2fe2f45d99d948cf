// SignalfdReaper, ExitFuture and SignalWatcher. Every scenario that reaps runs in a
// forked child (isolated_child.h): the reaper changes process-wide signal state.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/process/exit_future.h"
#include "shim/process/work_pool.h"
#include "unit/isolated_child.h"
#include "unit/reaper_fixture.h"
#include "unit/test_processes.h"

namespace {

using namespace std::chrono_literals;
using shim::ProcessExit;
using shim_test::ChildReport;
using shim_test::Ending;
using shim_test::ExitCollector;
using shim_test::LoopWithReaper;
using shim_test::ProcessFactory;

// How test process number `i` ends: a mix of exit codes and fatal signals (without
// core dumps).
Ending ending_for(int i, bool grandchild) {
  constexpr std::array<int, 4> kSignals = {SIGKILL, SIGTERM, SIGUSR2, SIGHUP};
  int kind = (grandchild ? i / 2 : i) % 5;
  if (kind < 4 && i % 3 == 0) return Ending{0, kSignals[static_cast<std::size_t>(kind)]};
  return Ending{(grandchild ? 100 : 0) + i % 97, 0};
}

struct Pipe {
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read_end >= 0) ::close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
  int read_end = -1;
  int write_end = -1;
};

char proc_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = content.rfind(')');
  if (paren == std::string::npos || paren + 2 >= content.size()) return '?';
  return content[paren + 2];
}

// Every expected pid exactly once with its status, and nothing else.
void check_exits(ChildReport& report, const std::map<pid_t, int>& expected,
                 const std::vector<ProcessExit>& exits) {
  std::map<pid_t, int> seen;
  for (const auto& exit : exits) {
    if (++seen[exit.pid] > 1) report.check(false, fmt::format("pid {} reported twice", exit.pid));
    auto it = expected.find(exit.pid);
    if (it == expected.end()) {
      report.check(false, fmt::format("unexpected pid {} (status {})", exit.pid, exit.status));
      continue;
    }
    report.check(exit.status == it->second,
                 fmt::format("pid {}: status {}, expected {}", exit.pid, exit.status, it->second));
  }
  for (const auto& [pid, status] : expected) {
    if (!seen.count(pid)) report.check(false, fmt::format("pid {} never reported", pid));
  }
  report.check(exits.size() == expected.size(),
               fmt::format("{} exits for {} processes", exits.size(), expected.size()));
}

// Returns some spawns only after the child had time to exit and be reaped, so that the
// exit-before-registration path is taken for sure.
class SlowToReturnSpawner final : public shim::Spawner {
 public:
  shim::Status spawn(const shim::SpawnRequest& request, shim::SpawnedProcess* process) override {
    shim::Status status = real_.spawn(request, process);
    if (calls_++ % 4 == 0) std::this_thread::sleep_for(20ms);
    return status;
  }

 private:
  shim::PosixSpawner real_;
  std::atomic<int> calls_{0};
};

}  // namespace

TEST_CASE("reaper reaps 1000 children and reparented grandchildren exactly once", "[reaper]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    constexpr int kChildren = 1000;
    LoopWithReaper loop;
    report.check(loop.start_status.ok(), "start: " + loop.start_status.to_string());
    ExitCollector collector;
    shim::Subscription subscription = loop.reaper.subscribe(collector.callback());

    Pipe release;        // grandchildren exit when its write end closes
    Pipe grandchildren;  // children report {i, grandchild pid} here
    std::map<pid_t, int> expected;
    ProcessFactory factory(kChildren * 3 / 2);
    factory.close_in_children(release.write_end);
    auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < kChildren; ++i) {
      // Children end at once; a grandchild is then reparented to us (the subreaper).
      pid_t pid = i % 2 == 0
                      ? factory.start_with_grandchild(ending_for(i, false), ending_for(i, true),
                                                      release.read_end, grandchildren.write_end, i)
                      : factory.start(ending_for(i, false));
      expected[pid] = ending_for(i, false).expected_status();
    }
    for (int n = 0; n < kChildren / 2; ++n) {
      std::array<int, 2> message{};
      if (::read(grandchildren.read_end, message.data(), sizeof(message)) != sizeof(message))
        throw std::runtime_error("read grandchild pid");
      expected[message[1]] = ending_for(message[0], true).expected_status();
    }
    release.close_write();  // all grandchildren exit at the same instant

    bool all = collector.wait_for_count(expected.size(), 60s);
    auto elapsed = std::chrono::steady_clock::now() - started;
    report.check(all,
                 fmt::format("only {} of {} exits arrived", collector.size(), expected.size()));
    loop.reaper.reap_now();
    std::this_thread::sleep_for(50ms);  // a duplicate would show up by now
    check_exits(report, expected, collector.exits());
    report.check(shim_test::no_children_left(), "children or zombies left");
    shim::ReaperStats stats = loop.reaper.stats();
    report.check(stats.reaped == expected.size(), fmt::format("reaped {}", stats.reaped));
    report.note(fmt::format("{} processes reaped in {} ms over {} wakeups", expected.size(),
                            std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(),
                            stats.wakeups));
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("reaper loses nothing when SIGCHLDs coalesce into one", "[reaper]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    constexpr int kChildren = 300;
    LoopWithReaper loop;
    ExitCollector collector;
    shim::Subscription subscription = loop.reaper.subscribe(collector.callback());

    Pipe release;
    ProcessFactory factory(kChildren);
    factory.close_in_children(release.write_end);
    std::map<pid_t, int> expected;
    for (int i = 0; i < kChildren; ++i) {
      pid_t pid = factory.start(ending_for(i, false), release.read_end);
      expected[pid] = ending_for(i, false).expected_status();
    }
    // Hold the loop, let every child die, then let the loop see the single pending SIGCHLD.
    std::promise<void> entered;
    std::promise<void> unblock;
    std::shared_future<void> unblocked = unblock.get_future().share();
    boost::asio::post(loop.io, [&entered, unblocked] {
      entered.set_value();
      unblocked.wait();
    });
    entered.get_future().wait();
    shim::ReaperStats before = loop.reaper.stats();
    release.close_write();
    auto deadline = std::chrono::steady_clock::now() + 30s;
    bool all_zombies = false;
    while (!all_zombies && std::chrono::steady_clock::now() < deadline) {
      all_zombies = std::all_of(expected.begin(), expected.end(),
                                [](const auto& entry) { return proc_state(entry.first) == 'Z'; });
      if (!all_zombies) std::this_thread::sleep_for(5ms);
    }
    report.check(all_zombies, "children did not all become zombies");
    unblock.set_value();

    report.check(collector.wait_for_count(expected.size(), 30s), "exits missing");
    check_exits(report, expected, collector.exits());
    shim::ReaperStats after = loop.reaper.stats();
    report.check(
        after.wakeups - before.wakeups == 1,
        fmt::format("{} wakeups, expected 1 coalesced SIGCHLD", after.wakeups - before.wakeups));
    report.check(after.reaped - before.reaped == kChildren,
                 fmt::format("reaped {} in that wakeup", after.reaped - before.reaped));
    report.check(shim_test::no_children_left(), "children or zombies left");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("claimed spawns get exactly their own status and are not fanned out", "[reaper]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    constexpr int kClaimed = 200;
    constexpr int kFailing = 20;
    constexpr int kOthers = 600;
    LoopWithReaper loop;
    shim::WorkPool pool(2);
    SlowToReturnSpawner spawner;
    ExitCollector fanned;
    shim::Subscription subscription = loop.reaper.subscribe(fanned.callback());

    struct Result {
      pid_t pid = -1;
      int status = -1;
      bool has_exit = false;
      bool on_loop = false;
    };
    std::vector<Result> results(kClaimed);
    std::atomic<int> failed_spawns_ok{0};
    std::atomic<int> finished{0};
    for (int i = 0; i < kClaimed + kFailing; ++i) {
      pool.post([&, i] {
        shim::ClaimedProcess process;
        if (i >= kClaimed) {  // exec fails: an error, and its 127 goes nowhere
          shim::SpawnRequest bad{.path = "/nonexistent/libshim-runc"};
          if (!loop.reaper.spawn_claimed(spawner, bad, &process).ok()) ++failed_spawns_ok;
          ++finished;
          return;
        }
        shim::SpawnRequest request{.path = "/bin/sh",
                                   .argv = {"sh", "-c", fmt::format("exit {}", i + 1)},
                                   .parent_death_signal = SIGKILL};
        if (!loop.reaper.spawn_claimed(spawner, request, &process).ok()) {
          ++finished;
          return;
        }
        Result& result = results[static_cast<std::size_t>(i)];
        result.pid = process.pid;
        if (i % 2 == 0) {  // blocking wait on the pool thread
          std::optional<ProcessExit> exit = process.exit.wait_for(20s);
          result.has_exit = exit.has_value();
          if (exit) result.status = exit->status;
          ++finished;
          return;
        }
        process.exit.async_wait(loop.io.get_executor(),
                                [&, i](const std::optional<ProcessExit>& exit) {
                                  Result& r = results[static_cast<std::size_t>(i)];
                                  r.has_exit = exit.has_value();
                                  if (exit) r.status = exit->status;
                                  r.on_loop = std::this_thread::get_id() == loop.loop_thread_id();
                                  ++finished;
                                });
      });
    }
    // Meanwhile other children exit all the time.
    std::map<pid_t, int> expected_fanned;
    ProcessFactory factory(kOthers);
    for (int i = 0; i < kOthers; ++i) {
      expected_fanned[factory.start(Ending{i % 50})] = i % 50;
      if (i % 2 == 0) std::this_thread::sleep_for(1ms);  // spread over the spawns
    }

    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (finished.load() < kClaimed + kFailing && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(2ms);
    report.check(finished.load() == kClaimed + kFailing,
                 fmt::format("{} spawns finished", finished.load()));
    report.check(fanned.wait_for_count(expected_fanned.size(), 30s), "fanned-out exits missing");
    pool.stop();
    std::this_thread::sleep_for(50ms);

    std::set<pid_t> claimed_pids;
    for (int i = 0; i < kClaimed; ++i) {
      const Result& r = results[static_cast<std::size_t>(i)];
      claimed_pids.insert(r.pid);
      report.check(
          r.has_exit && r.status == i + 1,
          fmt::format("claimed #{} pid {}: status {}, expected {}", i, r.pid, r.status, i + 1));
      if (i % 2 == 1) report.check(r.on_loop, fmt::format("async wait #{} not on the loop", i));
    }
    report.check(claimed_pids.size() == kClaimed, "claimed pids not distinct");
    report.check(failed_spawns_ok.load() == kFailing, "failing spawns did not report errors");
    std::vector<ProcessExit> exits = fanned.exits();
    for (const auto& exit : exits) {
      report.check(!claimed_pids.count(exit.pid),
                   fmt::format("claimed pid {} was fanned out", exit.pid));
    }
    check_exits(report, expected_fanned, exits);
    shim::ReaperStats stats = loop.reaper.stats();
    report.check(stats.claimed == kClaimed, fmt::format("stats.claimed {}", stats.claimed));
    report.check(stats.fanned_out == kOthers, fmt::format("stats.fanned_out {}", stats.fanned_out));
    report.check(stats.claimed_from_parked > 0, "the exit-before-registration path was not taken");
    report.note(fmt::format("{} exits parked during spawns, {} claims taken from them",
                            stats.parked, stats.claimed_from_parked));
    report.check(shim_test::no_children_left(), "children or zombies left");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("a slow subscriber delays neither the others nor reaping", "[reaper]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    constexpr int kChildren = 100;
    LoopWithReaper loop;
    ExitCollector fast;
    ExitCollector slow;
    boost::asio::io_context slow_loop;  // not running: its subscriber consumes nothing yet
    shim::Subscription fast_subscription = loop.reaper.subscribe(fast.callback());
    shim::Subscription slow_subscription =
        loop.reaper.subscribe(slow_loop.get_executor(), slow.callback());

    ProcessFactory factory(kChildren + 1);
    std::map<pid_t, int> expected;
    for (int i = 0; i < kChildren; ++i) expected[factory.start(Ending{i})] = i;
    report.check(fast.wait_for_count(kChildren, 30s), "fast subscriber starved");
    check_exits(report, expected, fast.exits());
    report.check(slow.size() == 0, "slow subscriber got exits before its loop ran");
    report.check(shim_test::no_children_left(), "reaping waited for the slow subscriber");
    std::vector<std::thread::id> threads = fast.threads();
    report.check(std::all_of(threads.begin(), threads.end(),
                             [&](auto id) { return id == loop.loop_thread_id(); }),
                 "fast subscriber not called on the loop thread");

    slow_loop.run();  // the slow consumer catches up, in reap order
    std::vector<ProcessExit> fast_exits = fast.exits();
    std::vector<ProcessExit> slow_exits = slow.exits();
    report.check(slow_exits == fast_exits, "slow subscriber saw other exits or another order");

    // After reset() no callback runs, even for exits already queued.
    slow_subscription.reset();
    factory.start(Ending{7});
    report.check(fast.wait_for_count(kChildren + 1, 10s), "late exit missing");
    slow_loop.restart();
    slow_loop.run();
    report.check(slow.size() == static_cast<std::size_t>(kChildren),
                 "a cancelled subscriber was called");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("stopping the reaper abandons claims, signals share the watcher", "[reaper]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    shim::PosixSpawner spawner;

    // SIGUSR1 through the same signalfd as SIGCHLD, on the loop thread.
    std::promise<shim::SignalInfo> got_usr1;
    std::thread::id handler_thread;
    loop.run_on_loop([&] {
      report.check(loop.signals
                       .watch(SIGUSR1,
                              [&](const shim::SignalInfo& info) {
                                handler_thread = std::this_thread::get_id();
                                got_usr1.set_value(info);
                              })
                       .ok(),
                   "watch SIGUSR1");
    });
    ::kill(::getpid(), SIGUSR1);
    auto usr1 = got_usr1.get_future();
    bool arrived = usr1.wait_for(10s) == std::future_status::ready;
    report.check(arrived, "SIGUSR1 not delivered");
    if (arrived) {
      shim::SignalInfo info = usr1.get();
      report.check(info.signo == SIGUSR1, "signo");
      report.check(info.sender_pid == ::getpid(), "sender pid");
      report.check(handler_thread == loop.loop_thread_id(), "handler not on the loop");
    }

    shim::ClaimedProcess sleeper;
    shim::SpawnRequest request{.path = "/bin/sleep", .argv = {"sleep", "30"}};
    report.check(loop.reaper.spawn_claimed(spawner, request, &sleeper).ok(), "spawn sleep");
    loop.run_on_loop([&] { loop.reaper.stop(); });
    auto exit = sleeper.exit.wait_for(5s);
    report.check(sleeper.exit.ready() && !exit.has_value(), "claim not abandoned on stop");
    report.check(sleeper.handle.signal(SIGKILL).ok(), "kill sleeper");
    ::waitpid(sleeper.pid, nullptr, 0);  // nobody reaps after stop()
    shim::ClaimedProcess refused;
    report.check(
        loop.reaper.spawn_claimed(spawner, request, &refused).code() == shim::Code::kUnavailable,
        "spawn_claimed after stop must fail");
  });
  shim_test::require_child_passed(outcome);
}

// A live upgrade's new program claims a child the old one started (a binary:// logger)
// before its reaper starts: an exit that happened during the swap waits as a zombie.
TEST_CASE("claim_running: a running child's exit, even one already a zombie, goes to the claim",
          "[reaper]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    shim::Status blocked = shim::SignalWatcher::block_in_this_thread({SIGCHLD});
    report.check(blocked.ok(), "block SIGCHLD");
    boost::asio::io_context io;
    shim::SignalWatcher signals(io.get_executor());
    shim::SignalfdReaper reaper(io.get_executor(), signals);
    std::vector<ProcessExit> fanned_out;
    auto subscription =
        reaper.subscribe([&](const ProcessExit& exit) { fanned_out.push_back(exit); });

    const pid_t early = ::fork();
    if (early == 0) ::_exit(7);
    const pid_t late = ::fork();
    if (late == 0) {
      ::pause();
      ::_exit(0);
    }
    while (proc_state(early) != 'Z') std::this_thread::sleep_for(1ms);
    shim::ExitFuture early_exit, late_exit, again;
    report.check(reaper.claim_running(early, &early_exit).ok(), "claim the zombie");
    report.check(reaper.claim_running(late, &late_exit).ok(), "claim the running child");
    report.check(reaper.claim_running(late, &again).code() == shim::Code::kFailedPrecondition,
                 "a second claim of one pid must fail");
    report.check(reaper.claim_running(0, &again).code() == shim::Code::kInvalidArgument,
                 "pid 0 is no child");
    report.check(reaper.start().ok(), "start");
    ::kill(late, SIGTERM);
    for (int i = 0; i < 500 && !(early_exit.ready() && late_exit.ready()); ++i) io.run_for(10ms);
    auto early_status = early_exit.wait_for(0s);
    auto late_status = late_exit.wait_for(0s);
    report.check(early_status && early_status->pid == early && early_status->status == 7,
                 "the zombie's exit 7");
    report.check(late_status && late_status->pid == late && late_status->status == 128 + SIGTERM,
                 "the running child's SIGTERM");
    io.run_for(50ms);
    report.check(fanned_out.empty(), "a claimed exit must not be fanned out");
    reaper.stop();
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("ExitFuture: blocking and async waits, abandonment", "[reaper]") {
  boost::asio::io_context io;
  shim::ExitPromise promise;
  shim::ExitFuture future = promise.future();
  CHECK(future.valid());
  CHECK_FALSE(future.ready());
  CHECK_FALSE(future.wait_for(1ms).has_value());

  std::vector<int> seen;
  future.async_wait(io.get_executor(), [&](const std::optional<ProcessExit>& exit) {
    seen.push_back(exit ? exit->status : -1);
  });
  ProcessExit exit = shim::make_process_exit(42, 9, std::chrono::system_clock::now());
  CHECK(exit.status == 137);
  std::thread setter([&] { promise.set(exit); });
  std::optional<ProcessExit> waited = future.wait();
  setter.join();
  REQUIRE(waited.has_value());
  CHECK(*waited == exit);
  CHECK(seen.empty());  // posted, never inline
  future.async_wait(io.get_executor(), [&](const std::optional<ProcessExit>& late) {
    seen.push_back(late ? late->status : -1);
  });
  io.run();
  CHECK(seen == std::vector<int>{137, 137});

  promise.abandon();  // after set: no effect
  CHECK(future.wait() == exit);

  std::optional<shim::ExitPromise> dropped;
  dropped.emplace();
  shim::ExitFuture orphan = dropped->future();
  dropped.reset();
  CHECK(orphan.ready());
  CHECK_FALSE(orphan.wait().has_value());

  CHECK(shim::exit_status_from_wait(3 << 8) == 3);
  CHECK(shim::exit_status_from_wait(SIGTERM) == 128 + SIGTERM);
}
