// run_and_capture / spawn_and_wait, run through a real reaper in a forked child.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "isolated_child.h"
#include "reaper_fixture.h"
#include "shim/posix_spawner.h"
#include "shim/run_command.h"

using namespace std::chrono_literals;
using shim_test::ChildReport;
using shim_test::LoopWithReaper;

TEST_CASE("run_and_capture collects output, feeds input, bounds size and time", "[reaper]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    shim::PosixSpawner spawner;
    shim_test::ExitCollector fanned;
    shim::Subscription subscription = loop.reaper.subscribe(fanned.callback());
    shim::CaptureResult result;

    {  // stdin in, stdout and stderr out, exit code
      shim::SpawnRequest request{.path = "/bin/sh",
                                 .argv = {"sh", "-c", "cat; echo oops >&2; exit 3"}};
      shim::Status status = shim::run_and_capture(loop.reaper, spawner, request,
                                                  {.input = "hello\n"}, &result);
      report.check(status.ok(), "cat: " + status.to_string());
      report.check(result.out == "hello\n", "cat out: " + result.out);
      report.check(result.err == "oops\n", "cat err: " + result.err);
      report.check(result.exit.status == 3, fmt::format("cat status {}", result.exit.status));
    }
    {  // more than a pipe buffer each way
      std::string big(1 << 20, 'x');
      for (std::size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>('a' + i % 26);
      shim::SpawnRequest request{.path = "/bin/cat"};
      shim::Status status = shim::run_and_capture(
          loop.reaper, spawner, request, {.input = big, .max_output = 2 << 20}, &result);
      report.check(status.ok() && result.out == big && !result.out_truncated,
                   fmt::format("1 MiB through cat: {} bytes back", result.out.size()));
    }
    {  // bounded output: the child still runs to completion (no SIGPIPE)
      shim::SpawnRequest request{.path = "/usr/bin/head", .argv = {"head", "-c", "100000", "/dev/zero"}};
      shim::Status status =
          shim::run_and_capture(loop.reaper, spawner, request, {.max_output = 1000}, &result);
      report.check(status.ok() && result.out.size() == 1000 && result.out_truncated &&
                       result.exit.status == 0,
                   fmt::format("truncation: {} bytes, status {}", result.out.size(),
                               result.exit.status));
    }
    {  // input the child never reads: no SIGPIPE for us
      shim::SpawnRequest request{.path = "/bin/true"};
      shim::Status status = shim::run_and_capture(loop.reaper, spawner, request,
                                                  {.input = std::string(1 << 20, 'y')}, &result);
      report.check(status.ok() && result.exit.status == 0, "unread input: " + status.to_string());
    }
    {  // timeout: SIGKILL through the pidfd
      auto started = std::chrono::steady_clock::now();
      shim::SpawnRequest request{.path = "/bin/sleep", .argv = {"sleep", "30"}};
      shim::Status status =
          shim::run_and_capture(loop.reaper, spawner, request, {.timeout = 200ms}, &result);
      auto took = std::chrono::steady_clock::now() - started;
      report.check(status.code() == shim::Code::kDeadlineExceeded, "timeout: " + status.to_string());
      report.check(status.message() == "/bin/sleep: timed out after 200 ms", status.message());
      report.check(result.exit.status == 128 + SIGKILL, "killed status");
      report.check(took < 5s, "timeout took too long");
    }
    {  // a grandchild keeping stdout open does not hold us up
      auto started = std::chrono::steady_clock::now();
      shim::SpawnRequest request{.path = "/bin/sh", .argv = {"sh", "-c", "sleep 30 & echo $!"}};
      shim::Status status = shim::run_and_capture(loop.reaper, spawner, request, {}, &result);
      auto took = std::chrono::steady_clock::now() - started;
      report.check(status.ok() && result.exit.status == 0, "background: " + status.to_string());
      report.check(took < 5s, "waited for the grandchild's EOF");
      pid_t background = std::atoi(result.out.c_str());
      report.check(background > 0 && ::kill(background, SIGKILL) == 0, "background pid");
      // The orphan was reparented to us; its exit is fanned out like any unknown pid.
      report.check(fanned.wait_for_count(1, 10s), "orphan exit not fanned out");
      auto exits = fanned.exits();
      report.check(!exits.empty() && exits.back().pid == background &&
                       exits.back().status == 128 + SIGKILL,
                   "orphan exit");
    }
    {  // spawn failure and spawn_and_wait
      shim::SpawnRequest bad{.path = "/nonexistent/libshim-cmd"};
      shim::Status status = shim::run_and_capture(loop.reaper, spawner, bad, {}, &result);
      report.check(status.message() == "exec /nonexistent/libshim-cmd: No such file or directory",
                   status.message());
      shim::ProcessExit exit;
      shim::SpawnRequest request{.path = "/bin/sh", .argv = {"sh", "-c", "kill -TERM $$"}};
      status = shim::spawn_and_wait(loop.reaper, spawner, request, &exit);
      report.check(status.ok() && exit.status == 128 + SIGTERM,
                   fmt::format("spawn_and_wait status {}", exit.status));
    }
    report.check(fanned.size() == 1, fmt::format("{} exits fanned out, expected 1", fanned.size()));
  });
  shim_test::require_child_passed(outcome);
}
