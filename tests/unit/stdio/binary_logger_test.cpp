// BinaryLogger (binary:// and binary-v2:// stdio loggers) with the real PosixSpawner and
// SignalfdReaper. The loggers are small shell scripts written to a temp dir. Every
// scenario that spawns runs in a forked child (isolated_child.h): the reaper changes
// process-wide signal state.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/stdio/process_io.h"
#include "stdio/binary_logger.h"
#include "stdio/stdio_uri.h"
#include "stdio_test_helpers.h"
#include "support/temp_dir.h"
#include "unit/isolated_child.h"
#include "unit/reaper_fixture.h"

namespace {

using namespace std::chrono_literals;
using shim::BinaryLogger;
using shim::BinaryLoggerSettings;
namespace stdio = shim::stdio;
using shim_test::ChildReport;
using shim_test::ExitCollector;
using shim_test::LoopWithReaper;

// Records argv and environment, then execs a sleep with fds 0-4 (fd 5 closed: ready by EOF).
const char* kInspectLogger = R"(#!/bin/sh
d=${0%/*}
for a in "$0" "$@"; do printf '%s\n' "$a"; done > "$d/argv"
/bin/tr '\0' '\n' < /proc/$$/environ > "$d/env"
exec /bin/sleep 10 5>&-
)";

// A logger as the logging library would run it: copies fd 3/4 to files, says ready with a
// byte, and keeps running until SIGTERM (noted in a file).
const char* kCopyLogger = R"(#!/bin/sh
d=${0%/*}
trap 'echo TERM > "$d/term"; exit 0' TERM
/bin/cat <&3 > "$d/stdout" 4<&- 5>&- &
/bin/cat <&4 > "$d/stderr" 3<&- 5>&- &
exec 3<&- 4<&-
/bin/sleep 0.1
printf R >&5
exec 5>&-
while :; do /bin/sleep 0.02; done
)";

// Closes fd 5 without a byte and stays alive.
const char* kEofLogger = R"(#!/bin/sh
exec /bin/sleep 10 5>&-
)";

// Exits at once without a byte.
const char* kExitingLogger = R"(#!/bin/sh
exit 3
)";

// Ready with a byte, then ignores SIGTERM.
const char* kStubbornLogger = R"(#!/bin/sh
trap '' TERM
printf R >&5
exec /bin/sleep 10 5>&-
)";

// Holds fd 5 open and never says anything.
const char* kSilentLogger = R"(#!/bin/sh
exec /bin/sleep 10
)";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::string write_logger(const shim::test::TempDir& dir, const char* script) {
  std::string path = dir.sub("logger");
  {
    std::ofstream out(path);
    out << script;
  }
  ::chmod(path.c_str(), 0755);
  return path;
}

struct Harness {
  explicit Harness(LoopWithReaper& loop_) : loop(loop_) {}

  shim::Status make(const char* script, const std::string& scheme, const std::string& query,
                    std::shared_ptr<BinaryLogger>* logger) {
    path = write_logger(dir, script);
    shim::StdioUri uri;
    std::string text = fmt::format("{}://{}{}", scheme, path, query.empty() ? "" : "?" + query);
    if (auto s = shim::parse_stdio_uri(text, &uri); !s.ok()) return s;
    return BinaryLogger::create(loop.io.get_executor(), uri, settings(), stdio_test::test_logger(),
                                logger);
  }

  BinaryLoggerSettings settings() {
    BinaryLoggerSettings s;
    s.reaper = &loop.reaper;
    s.spawner = &spawner;
    s.process_id = "c1";
    s.ns = "ns1";
    s.ready_timeout = ready_timeout;
    s.stop_grace = stop_grace;
    return s;
  }

  // stop() and the exit it reports, with the time it took.
  std::optional<shim::ProcessExit> stop(BinaryLogger& logger,
                                        std::chrono::milliseconds* took = nullptr) {
    std::promise<std::optional<shim::ProcessExit>> done;
    auto begin = std::chrono::steady_clock::now();
    logger.stop([&](const std::optional<shim::ProcessExit>& exit) { done.set_value(exit); });
    auto future = done.get_future();
    if (future.wait_for(5s) != std::future_status::ready) return std::nullopt;
    if (took) {
      *took = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - begin);
    }
    return future.get();
  }

  LoopWithReaper& loop;
  shim::PosixSpawner spawner;
  shim::test::TempDir dir{"bl-"};
  std::string path;
  std::chrono::milliseconds ready_timeout{5000};
  std::chrono::milliseconds stop_grace{5000};
};

std::string pipe_link(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "?";
  return fmt::format("pipe:[{}]", st.st_ino);
}

std::string fd_link(pid_t pid, int fd) {
  char target[256] = {};
  ssize_t n = ::readlink(fmt::format("/proc/{}/fd/{}", pid, fd).c_str(), target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "";
}

std::vector<int> open_fds(pid_t pid) {
  std::vector<int> fds;
  for (int fd = 0; fd < 64; ++fd) {
    if (!fd_link(pid, fd).empty()) fds.push_back(fd);
  }
  return fds;
}

}  // namespace

TEST_CASE("logger arguments follow Go's url.Query in query order", "[binary-logger]") {
  using shim::binary_logger_args;
  CHECK(binary_logger_args("") == std::vector<std::string>{});
  CHECK(binary_logger_args("key=value&alpha=1") ==
        std::vector<std::string>{"key", "value", "alpha", "1"});
  CHECK(binary_logger_args("z=two+words%21&k%3D=a%26b") ==
        std::vector<std::string>{"z", "two words!", "k=", "a&b"});
  // First value wins, a bare key gets "", empty pairs are skipped, "=v" has an empty key.
  CHECK(binary_logger_args("a=1&&a=2&flag&=v") ==
        std::vector<std::string>{"a", "1", "flag", "", "", "v"});
  // Pairs Go's parser rejects are dropped: bad escapes, ';' separators.
  CHECK(binary_logger_args("bad=%zz&x=1;y=2&ok=%41") == std::vector<std::string>{"ok", "A"});
}

TEST_CASE("binary:// logger gets exactly its argv, environment and fds 3 and 4",
          "[binary-logger]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    ExitCollector fanned;
    shim::Subscription subscription = loop.reaper.subscribe(fanned.callback());
    Harness h(loop);
    std::shared_ptr<BinaryLogger> logger;
    shim::Status made =
        h.make(kInspectLogger, "binary", "key=value&alpha=1&zeta=two+words&key=dup", &logger);
    if (!report.check(made.ok(), made.to_string())) return;
    report.check(logger->pid() == -1, "pid before start");
    shim::Status started = logger->start();
    if (!report.check(started.ok(), started.to_string())) return;
    pid_t pid = logger->pid();
    report.check(pid > 0, "no pid");

    std::string argv = read_text(h.dir.sub("argv"));
    report.check(argv == h.path + "\nkey\nvalue\nalpha\n1\nzeta\ntwo words\n", "argv: " + argv);
    std::string env = read_text(h.dir.sub("env"));
    report.check(env == "CONTAINER_ID=c1\nCONTAINER_NAMESPACE=ns1\n", "env: " + env);

    // Once sleep runs (fd 5 closed by its exec), its fds are 0-2 = /dev/null, 3 and 4 =
    // our pipes, and nothing else.
    stdio::Fd out = logger->take_stdout_writer();
    stdio::Fd err = logger->take_stderr_writer();
    report.check(!logger->take_stdout_writer().valid(), "stdout writer taken twice");
    report.check(
        eventually([&] { return read_text(fmt::format("/proc/{}/comm", pid)) == "sleep\n"; }, 2s),
        "logger did not exec sleep");
    // The kernel names the new program before it closes the close-on-exec fds: look again.
    std::vector<int> fds;
    const bool only_pipes = eventually(
        [&] {
          fds = open_fds(pid);
          return fds == std::vector<int>{0, 1, 2, 3, 4};
        },
        2s);
    report.check(only_pipes, fmt::format("logger fds: {}", fmt::join(fds, ",")));
    for (int fd : {0, 1, 2})
      report.check(fd_link(pid, fd) == "/dev/null", fmt::format("fd {}: {}", fd, fd_link(pid, fd)));
    report.check(fd_link(pid, 3) == pipe_link(out.get()), "fd 3: " + fd_link(pid, 3));
    report.check(fd_link(pid, 4) == pipe_link(err.get()), "fd 4: " + fd_link(pid, 4));

    // SIGTERM ends it well before the grace period.
    std::chrono::milliseconds took{};
    auto exit = h.stop(*logger, &took);
    report.check(exit.has_value() && exit->pid == pid && exit->status == 128 + SIGTERM,
                 fmt::format("exit status {}", exit ? exit->status : -1));
    report.check(took < 2s, fmt::format("stop took {} ms", took.count()));
    // Not a container process: its exit was claimed, never fanned out.
    for (const auto& e : fanned.exits()) report.check(e.pid != pid, "logger exit fanned out");
    // A second stop() reports the same exit at once.
    auto again = h.stop(*logger);
    report.check(again.has_value() && again->pid == pid, "second stop");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("bytes written to the write ends reach the logger, readiness waits for the byte",
          "[binary-logger]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    for (const char* scheme : {"binary", "binary-v2"}) {
      Harness h(loop);
      std::shared_ptr<BinaryLogger> logger;
      if (!report.check(h.make(kCopyLogger, scheme, "", &logger).ok(), "create")) return;
      auto begin = std::chrono::steady_clock::now();
      shim::Status started = logger->start();
      auto took = std::chrono::steady_clock::now() - begin;
      if (!report.check(started.ok(), started.to_string())) return;
      report.check(took >= 100ms,
                   fmt::format("{}: start returned before the logger was ready", scheme));

      std::string out_data = stdio_test::seq_text(40000);  // ~220 KB: more than a pipe holds
      std::string err_data = "to stderr\n";
      stdio::Fd out = logger->take_stdout_writer();
      stdio::Fd err = logger->take_stderr_writer();
      report.check(::write(err.get(), err_data.data(), err_data.size()) ==
                       static_cast<ssize_t>(err_data.size()),
                   "write stderr");
      std::string_view rest = out_data;
      while (!rest.empty()) {
        ssize_t n = ::write(out.get(), rest.data(), rest.size());
        if (!report.check(n > 0, "write stdout")) break;
        rest.remove_prefix(static_cast<std::size_t>(n));
      }
      out.reset();
      err.reset();
      report.check(
          eventually([&] { return read_text(h.dir.sub("stdout")) == out_data; }, 2s),
          fmt::format("{}: stdout has {} bytes", scheme, read_text(h.dir.sub("stdout")).size()));
      report.check(eventually([&] { return read_text(h.dir.sub("stderr")) == err_data; }, 2s),
                   fmt::format("{}: stderr: {}", scheme, read_text(h.dir.sub("stderr"))));
      report.check(::access(h.dir.sub("term").c_str(), F_OK) != 0, "TERM before stop");
      auto exit = h.stop(*logger);
      report.check(exit.has_value() && exit->status == 0,
                   fmt::format("{}: exit {}", scheme, exit ? exit->status : -1));
      report.check(read_text(h.dir.sub("term")) == "TERM\n", "the logger did not get SIGTERM");
    }
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("EOF without a byte: ready for binary://, an error for binary-v2://", "[binary-logger]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    const std::string kNotReady =
        "logging binary did not call ready (it may have crashed or exited prematurely)";
    for (const char* script : {kEofLogger, kExitingLogger}) {
      bool alive = script == kEofLogger;
      {
        Harness h(loop);
        std::shared_ptr<BinaryLogger> logger;
        if (!report.check(h.make(script, "binary", "", &logger).ok(), "create")) return;
        shim::Status started = logger->start();
        report.check(started.ok(), "binary:// EOF is ready: " + started.to_string());
        auto exit = h.stop(*logger);
        int expected = alive ? 128 + SIGTERM : 3;
        report.check(
            exit.has_value() && exit->status == expected,
            fmt::format("binary:// exit {} (expected {})", exit ? exit->status : -1, expected));
      }
      {
        Harness h(loop);
        std::shared_ptr<BinaryLogger> logger;
        if (!report.check(h.make(script, "binary-v2", "", &logger).ok(), "create")) return;
        shim::Status started = logger->start();
        report.check(!started.ok() && started.message() == kNotReady,
                     "binary-v2: " + started.to_string());
        // The failed logger is killed; stop() only collects its exit.
        auto exit = h.stop(*logger);
        int expected = alive ? 128 + SIGKILL : 3;
        report.check(
            exit.has_value() && exit->status == expected,
            fmt::format("binary-v2 exit {} (expected {})", exit ? exit->status : -1, expected));
      }
    }
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("stop: SIGTERM, then SIGKILL after the grace period", "[binary-logger]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    Harness h(loop);
    h.stop_grace = 200ms;
    std::shared_ptr<BinaryLogger> logger;
    if (!report.check(h.make(kStubbornLogger, "binary-v2", "", &logger).ok(), "create")) return;
    shim::Status started = logger->start();
    if (!report.check(started.ok(), started.to_string())) return;
    pid_t pid = logger->pid();
    report.check(
        eventually([&] { return read_text(fmt::format("/proc/{}/comm", pid)) == "sleep\n"; }, 2s),
        "logger did not exec sleep");
    std::chrono::milliseconds took{};
    auto exit = h.stop(*logger, &took);
    report.check(exit.has_value() && exit->status == 128 + SIGKILL,
                 fmt::format("exit {}", exit ? exit->status : -1));
    report.check(took >= 200ms && took < 1500ms, fmt::format("stop took {} ms", took.count()));
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("readiness is bounded and stop() interrupts a start", "[binary-logger]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    {
      Harness h(loop);
      h.ready_timeout = 150ms;
      std::shared_ptr<BinaryLogger> logger;
      if (!report.check(h.make(kSilentLogger, "binary", "", &logger).ok(), "create")) return;
      shim::Status started = logger->start();
      report.check(!started.ok() && started.message().find("did not get ready within 150 ms") !=
                                        std::string::npos,
                   started.to_string());
      auto exit = h.stop(*logger);
      report.check(exit.has_value() && exit->status == 128 + SIGKILL,
                   "timed-out logger not killed");
    }
    {
      Harness h(loop);
      std::shared_ptr<BinaryLogger> logger;
      if (!report.check(h.make(kSilentLogger, "binary", "", &logger).ok(), "create")) return;
      auto start = std::async(std::launch::async, [&] { return logger->start(); });
      report.check(eventually([&] { return logger->pid() > 0; }, 2s), "not spawned");
      auto exit = h.stop(*logger);
      report.check(start.wait_for(2s) == std::future_status::ready, "start() still waiting");
      shim::Status started = start.get();
      report.check(!started.ok(), "start() succeeded although stopped");
      report.check(exit.has_value() && exit->status == 128 + SIGTERM,
                   fmt::format("exit {}", exit ? exit->status : -1));
    }
    {
      // Stopped before start: nothing is spawned, the callback gets no exit.
      Harness h(loop);
      std::shared_ptr<BinaryLogger> logger;
      if (!report.check(h.make(kSilentLogger, "binary", "", &logger).ok(), "create")) return;
      auto exit = h.stop(*logger);
      report.check(!exit.has_value(), "exit without a process");
      report.check(!logger->start().ok(), "start after stop");
      report.check(logger->pid() == -1, "spawned after stop");
    }
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("ProcessIO with binary://: runc gets the pipes, close() stops the logger",
          "[binary-logger]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    LoopWithReaper loop;
    Harness h(loop);
    std::string path = write_logger(h.dir, kCopyLogger);
    shim::StdioSpec spec{"", "binary://" + path + "?a=b", "binary://" + path + "?a=b"};
    shim::ProcessIOOptions options;
    options.binary_logger = h.settings();
    std::unique_ptr<shim::ProcessIO> io;
    shim::Status created = shim::ProcessIO::create(loop.io.get_executor(), spec, 0, 0,
                                                   stdio_test::test_logger(), &io, options);
    if (!report.check(created.ok(), created.to_string())) return;
    report.check(io->runtime_stdin() == -1, "stdin pipe for a logger");
    report.check(io->runtime_stdout() >= 0 && io->runtime_stderr() >= 0, "no runtime ends");
    report.check(!io->take_logger_stdout_writer().valid(), "writer handed out without a terminal");
    report.check(io->logger_pid() == -1, "pid before the start job");
    shim::Status started = std::async(std::launch::async, io->logger_starter()).get();
    if (!report.check(started.ok(), started.to_string())) return;
    pid_t pid = io->logger_pid();
    report.check(pid > 0, "no logger pid");

    // What runc's process would write, then runc's ends are closed.
    report.check(::write(io->runtime_stdout(), "out\n", 4) == 4, "write stdout");
    report.check(::write(io->runtime_stderr(), "err\n", 4) == 4, "write stderr");
    io->close_runtime_ends();
    std::promise<shim::Status> start_status;
    loop.run_on_loop([&] { start_status.set_value(io->start()); });
    report.check(start_status.get_future().get().ok(), "start");
    report.check(io->drained(), "nothing to drain with a logger");
    report.check(eventually([&] { return read_text(h.dir.sub("stdout")) == "out\n"; }, 2s),
                 "stdout");
    report.check(eventually([&] { return read_text(h.dir.sub("stderr")) == "err\n"; }, 2s),
                 "stderr");
    report.check(::access(h.dir.sub("term").c_str(), F_OK) != 0, "TERM before close");
    // Delete's order: close(), then the reply once the logger has exited.
    std::promise<bool> after_exit;
    loop.run_on_loop([&] {
      io->close();
      io->after_logger_exit(
          [&] { after_exit.set_value(read_text(h.dir.sub("term")) == "TERM\n"); });
      io.reset();
    });
    auto exited = after_exit.get_future();
    report.check(exited.wait_for(2s) == std::future_status::ready && exited.get(),
                 "after_logger_exit ran before the logger had handled SIGTERM");
    report.check(eventually([&] { return ::kill(pid, 0) != 0; }, 2s), "logger not reaped");
    // Without a logger `next` runs right away.
    std::unique_ptr<shim::ProcessIO> null_io;
    report.check(shim::ProcessIO::create(loop.io.get_executor(), {}, 0, 0,
                                         stdio_test::test_logger(), &null_io, options)
                     .ok(),
                 "null io");
    bool ran = false;
    null_io->after_logger_exit([&] { ran = true; });
    report.check(ran, "after_logger_exit without a logger did not run at once");
    loop.run_on_loop([&] { null_io.reset(); });

    // Without a reaper and spawner, binary:// stays unimplemented.
    std::unique_ptr<shim::ProcessIO> plain;
    shim::Status unimplemented = shim::ProcessIO::create(loop.io.get_executor(), spec, 0, 0,
                                                         stdio_test::test_logger(), &plain);
    report.check(unimplemented.code() == shim::Code::kUnimplemented, unimplemented.to_string());
    // A failing start job names the I/O setup, as the Go shim does.
    shim::StdioSpec missing{"", "binary-v2:///nonexistent/logger", ""};
    shim::Status created2 = shim::ProcessIO::create(loop.io.get_executor(), missing, 0, 0,
                                                    stdio_test::test_logger(), &plain, options);
    if (!report.check(created2.ok(), created2.to_string())) return;
    shim::Status failed = plain->logger_starter()();
    report.check(failed.message().starts_with("failed to create init process I/O: failed to start "
                                              "binary process: exec /nonexistent/logger"),
                 failed.to_string());
    loop.run_on_loop([&] { plain.reset(); });
  });
  shim_test::require_child_passed(outcome);
}
