// run_and_capture / spawn_and_wait, run through a real reaper in a forked child.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/process/run_command.h"
#include "unit/isolated_child.h"
#include "unit/reaper_fixture.h"

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
      shim::Status status =
          shim::run_and_capture(loop.reaper, spawner, request, {.input = "hello\n"}, &result);
      report.check(status.ok(), "cat: " + status.to_string());
      report.check(result.out == "hello\n", "cat out: " + result.out);
      report.check(result.err == "oops\n", "cat err: " + result.err);
      report.check(result.exit.status == 3, fmt::format("cat status {}", result.exit.status));
    }
    {  // more than a pipe buffer each way
      std::string big(1 << 20, 'x');
      for (std::size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>('a' + i % 26);
      shim::SpawnRequest request{.path = "/bin/cat"};
      shim::Status status = shim::run_and_capture(loop.reaper, spawner, request,
                                                  {.input = big, .max_output = 2 << 20}, &result);
      report.check(status.ok() && result.out == big && !result.out_truncated,
                   fmt::format("1 MiB through cat: {} bytes back", result.out.size()));
    }
    {  // bounded output: the child still runs to completion (no SIGPIPE)
      shim::SpawnRequest request{.path = "/usr/bin/head",
                                 .argv = {"head", "-c", "100000", "/dev/zero"}};
      shim::Status status =
          shim::run_and_capture(loop.reaper, spawner, request, {.max_output = 1000}, &result);
      report.check(
          status.ok() && result.out.size() == 1000 && result.out_truncated &&
              result.exit.status == 0,
          fmt::format("truncation: {} bytes, status {}", result.out.size(), result.exit.status));
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
      report.check(status.code() == shim::Code::kDeadlineExceeded,
                   "timeout: " + status.to_string());
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
      report.check(
          !exits.empty() && exits.back().pid == background && exits.back().status == 128 + SIGKILL,
          "orphan exit");
    }
    {  // spawn failure and spawn_and_wait
      shim::SpawnRequest bad{.path = "/nonexistent/libshim-cmd"};
      shim::Status status = shim::run_and_capture(loop.reaper, spawner, bad, {}, &result);
      report.check(status.message() == "exec /nonexistent/libshim-cmd: No such file or directory",
                   status.message());
      report.check(!result.started, "a failed spawn is not started");
      shim::ProcessExit exit;
      shim::SpawnRequest request{.path = "/bin/sh", .argv = {"sh", "-c", "kill -TERM $$"}};
      status = shim::spawn_and_wait(loop.reaper, spawner, request, &exit);
      report.check(status.ok() && exit.status == 128 + SIGTERM,
                   fmt::format("spawn_and_wait status {}", exit.status));
    }
    {  // stderr routed with stdout: one interleaved capture
      shim::SpawnRequest request{.path = "/bin/sh",
                                 .argv = {"sh", "-c", "echo 1; echo 2 >&2; echo 3"}};
      shim::Status status = shim::run_and_capture(
          loop.reaper, spawner, request, {.err = shim::OutputRoute::kSameAsStdout}, &result);
      report.check(status.ok() && result.started, "2>&1: " + status.to_string());
      report.check(result.out == "1\n2\n3\n" && result.err.empty(), "2>&1 out: " + result.out);
    }
    {  // routes kept as the request maps them: stdin and stderr from/to our pipes
      int in_fds[2];
      int err_fds[2];
      report.check(::pipe2(in_fds, O_CLOEXEC) == 0 && ::pipe2(err_fds, O_CLOEXEC) == 0, "pipes");
      report.check(::write(in_fds[1], "fed\n", 4) == 4, "prefill stdin");
      ::close(in_fds[1]);
      shim::SpawnRequest request{.path = "/bin/sh",
                                 .argv = {"sh", "-c", "read x; echo \"$x\" >&2; echo kept"},
                                 .fds = {{0, in_fds[0]}, {2, err_fds[1]}}};
      shim::Status status = shim::run_and_capture(
          loop.reaper, spawner, request, {.err = shim::OutputRoute::kAsRequested}, &result);
      ::close(in_fds[0]);
      ::close(err_fds[1]);
      char buffer[64] = {};
      ssize_t n = ::read(err_fds[0], buffer, sizeof buffer - 1);
      ::close(err_fds[0]);
      report.check(status.ok() && result.out == "kept\n" && result.err.empty(),
                   "as requested: " + status.to_string() + " out " + result.out);
      report.check(n == 4 && std::string(buffer) == "fed\n", "stderr into the request's fd");
    }
    {  // nothing mapped and nothing captured: /dev/null both ways
      shim::SpawnRequest request{.path = "/bin/sh",
                                 .argv = {"sh", "-c", "cat; echo lost; echo lost >&2"}};
      shim::Status status = shim::run_and_capture(
          loop.reaper, spawner, request,
          {.out = shim::OutputRoute::kAsRequested, .err = shim::OutputRoute::kSameAsStdout},
          &result);
      report.check(
          status.ok() && result.exit.status == 0 && result.out.empty() && result.err.empty(),
          "dev null: " + status.to_string());
    }
    {  // stdout cannot follow itself
      shim::SpawnRequest request{.path = "/bin/true"};
      shim::Status status = shim::run_and_capture(
          loop.reaper, spawner, request, {.out = shim::OutputRoute::kSameAsStdout}, &result);
      report.check(status.code() == shim::Code::kInvalidArgument && !result.started,
                   "bad route: " + status.to_string());
    }
    report.check(fanned.size() == 1, fmt::format("{} exits fanned out, expected 1", fanned.size()));
  });
  shim_test::require_child_passed(outcome);
}
