#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/clock.h"
#include "shim/logger.h"

namespace {

using namespace std::chrono;
using shim::LogLevel;

// 2026-11-29T09:26:33.125845343Z
const system_clock::time_point kExampleTime =
    system_clock::time_point(duration_cast<system_clock::duration>(
        seconds(1795944393) + nanoseconds(125845343)));

class FixedClock final : public shim::Clock {
 public:
  explicit FixedClock(system_clock::time_point now) : now_(now) {}
  system_clock::time_point now() const override { return now_; }
  void advance(nanoseconds by) { now_ += duration_cast<system_clock::duration>(by); }

 private:
  system_clock::time_point now_;
};

struct CapturedLines {
  std::vector<std::string> lines;
  std::shared_ptr<shim::LogSink> sink() {
    return std::make_shared<shim::CallbackLogSink>(
        [this](std::string_view line) { lines.emplace_back(line); });
  }
};

std::string read_available(int fd) {
  std::string out;
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) out.append(buffer, n);
  return out;
}

}  // namespace

TEST_CASE("logger: RFC3339 with fixed nanoseconds in UTC", "[logger]") {
  CHECK(shim::format_rfc3339_nano_fixed(kExampleTime) == "2026-11-29T09:26:33.125845343Z");
  CHECK(shim::format_rfc3339_nano_fixed(system_clock::time_point{}) ==
        "1970-01-01T00:00:00.000000000Z");
  CHECK(shim::format_rfc3339_nano_fixed(system_clock::time_point{} - nanoseconds(1)) ==
        "1969-12-31T23:59:59.999999999Z");
  CHECK(shim::format_rfc3339_nano_fixed(kExampleTime + milliseconds(875) - nanoseconds(845343)) ==
        "2026-11-29T09:26:34.000000000Z");
}

TEST_CASE("logger: a line looks like the Go shim's", "[logger]") {
  const std::string line = shim::format_log_line(
      kExampleTime, LogLevel::kInfo, "starting signal loop",
      {{"runtime", "io.containerd.runc.v2"}, {"namespace", "default"},
       {"path", "/run/containerd/io.containerd.runtime.v2.task/default/t1"}, {"pid", 24331}});
  CHECK(line ==
        "time=\"2026-11-29T09:26:33.125845343Z\" level=info msg=\"starting signal loop\" "
        "namespace=default path=/run/containerd/io.containerd.runtime.v2.task/default/t1 "
        "pid=24331 runtime=io.containerd.runc.v2\n");
}

TEST_CASE("logger: levels use logrus names", "[logger]") {
  CHECK(shim::log_level_name(LogLevel::kTrace) == "trace");
  CHECK(shim::log_level_name(LogLevel::kDebug) == "debug");
  CHECK(shim::log_level_name(LogLevel::kInfo) == "info");
  CHECK(shim::log_level_name(LogLevel::kWarn) == "warning");
  CHECK(shim::log_level_name(LogLevel::kError) == "error");
  CHECK_THAT(shim::format_log_line(kExampleTime, LogLevel::kWarn, "x", {}),
             Catch::Contains(" level=warning msg=x\n"));
}

TEST_CASE("logger: quoting follows logrus and Go %q", "[logger]") {
  auto value_of = [](const std::string& value) {
    std::string line = shim::format_log_line(kExampleTime, LogLevel::kInfo, "", {{"k", value}});
    std::string prefix = "time=\"2026-11-29T09:26:33.125845343Z\" level=info k=";
    REQUIRE(line.rfind(prefix, 0) == 0);
    REQUIRE(line.back() == '\n');
    return line.substr(prefix.size(), line.size() - prefix.size() - 1);
  };
  CHECK(value_of("plain-._/@^+AZaz09") == "plain-._/@^+AZaz09");
  CHECK(value_of("") == "");
  CHECK(value_of("a b") == "\"a b\"");
  CHECK(value_of("a=b") == "\"a=b\"");
  CHECK(value_of("x:y") == "\"x:y\"");
  CHECK(value_of("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(value_of("back\\slash") == "\"back\\\\slash\"");
  CHECK(value_of("l1\nl2\tt\r") == "\"l1\\nl2\\tt\\r\"");
  CHECK(value_of(std::string("\x01\x7f\a\b\f\v", 6)) == "\"\\x01\\x7f\\a\\b\\f\\v\"");
  CHECK(value_of("caf\xc3\xa9") == "\"caf\xc3\xa9\"");           // printable: kept
  CHECK(value_of("\xff") == "\"\\xff\"");                         // invalid byte
  CHECK(value_of("nb\xc2\xa0sp") == "\"nb\\u00a0sp\"");           // NBSP: not printable
  CHECK(value_of("zw\xe2\x80\x8bsp") == "\"zw\\u200bsp\"");       // zero-width space
  CHECK(value_of("\xf3\xb0\x80\x80") == "\"\\U000f0000\"");       // private use plane
  CHECK(value_of("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");  // emoji: kept
  CHECK(shim::go_quote("") == "\"\"");
}

TEST_CASE("logger: field order, duplicates and clashes", "[logger]") {
  const std::string line = shim::format_log_line(
      kExampleTime, LogLevel::kError, "",
      {{"b", "1"}, {"a", "2"}, {"b", "3"}, {"msg", "m"}, {"time", "t"}, {"ok", true},
       {"neg", -5}});
  CHECK(line ==
        "time=\"2026-11-29T09:26:33.125845343Z\" level=error a=2 b=3 fields.msg=m "
        "fields.time=t neg=-5 ok=true\n");
}

TEST_CASE("logger: level filter, default fields and children", "[logger]") {
  FixedClock clock(kExampleTime);
  CapturedLines captured;
  shim::Logger logger(captured.sink(), clock, LogLevel::kInfo,
                      {{"namespace", "default"}, {"runtime", "io.containerd.runc.v2"}});
  logger.debug("hidden");
  logger.trace("hidden too");
  CHECK(captured.lines.empty());
  CHECK_FALSE(logger.enabled(LogLevel::kDebug));
  CHECK(logger.enabled(LogLevel::kWarn));

  logger.info("hello", {{"pid", 42}});
  REQUIRE(captured.lines.size() == 1);
  CHECK(captured.lines[0] ==
        "time=\"2026-11-29T09:26:33.125845343Z\" level=info msg=hello namespace=default "
        "pid=42 runtime=io.containerd.runc.v2\n");

  shim::Logger child = logger.with({{"id", "t1"}, {"namespace", "k8s.io"}});
  clock.advance(nanoseconds(1));
  child.warn("from child", {{"namespace", "per-call"}});
  REQUIRE(captured.lines.size() == 2);
  CHECK(captured.lines[1] ==
        "time=\"2026-11-29T09:26:33.125845344Z\" level=warning msg=\"from child\" id=t1 "
        "namespace=per-call runtime=io.containerd.runc.v2\n");

  logger.error("parent unchanged");
  REQUIRE(captured.lines.size() == 3);
  CHECK_THAT(captured.lines[2],
             Catch::EndsWith("namespace=default runtime=io.containerd.runc.v2\n"));

  logger.set_level(LogLevel::kTrace);
  logger.trace("now visible");
  REQUIRE(captured.lines.size() == 4);
  CHECK_THAT(captured.lines[3], Catch::Contains("level=trace msg=\"now visible\""));
}

TEST_CASE("logger: the fd sink writes whole lines and makes the fd non-blocking", "[logger]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  auto sink = std::make_shared<shim::FdLogSink>(fds[1]);
  CHECK((::fcntl(fds[1], F_GETFL) & O_NONBLOCK) != 0);

  FixedClock clock(kExampleTime);
  shim::Logger logger(sink, clock);
  logger.info("one");
  logger.info("two", {{"k", "v"}});
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  CHECK(read_available(fds[0]) ==
        "time=\"2026-11-29T09:26:33.125845343Z\" level=info msg=one\n"
        "time=\"2026-11-29T09:26:33.125845343Z\" level=info msg=two k=v\n");
  CHECK(sink->dropped() == 0);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("logger: a full pipe drops lines instead of blocking", "[logger]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  REQUIRE(::fcntl(fds[1], F_SETPIPE_SZ, 4096) >= 4096);
  const int capacity = ::fcntl(fds[1], F_GETPIPE_SZ);
  shim::FdLogSink sink(fds[1]);

  // Lines of 100 bytes: at most capacity/100 fit; the rest must be dropped, not wait.
  const std::string line = std::string(99, 'x') + "\n";
  const int attempts = capacity / 100 + 50;
  for (int i = 0; i < attempts; ++i) sink.write(line);
  CHECK(sink.dropped() >= 50);

  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  const std::string drained = read_available(fds[0]);
  CHECK(drained.size() == (attempts - sink.dropped()) * line.size());
  CHECK(drained.find_first_not_of(line) == std::string::npos);

  // Room again: the next line goes through.
  sink.write("after\n");
  CHECK(read_available(fds[0]) == "after\n");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("logger: a line cut short is ended before the next one", "[logger]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  const int capacity = ::fcntl(fds[1], F_GETPIPE_SZ);
  shim::FdLogSink sink(fds[1]);

  // Longer than PIPE_BUF and than the pipe: the kernel writes part of it.
  const std::string huge = std::string(static_cast<std::size_t>(capacity) * 2, 'h') + "\n";
  sink.write(huge);
  CHECK(sink.dropped() == 1);

  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  const std::string partial = read_available(fds[0]);
  CHECK(partial.size() == static_cast<std::size_t>(capacity));
  CHECK(partial.find('\n') == std::string::npos);

  sink.write("next\n");
  CHECK(read_available(fds[0]) == "\nnext\n");
  sink.write("again\n");
  CHECK(read_available(fds[0]) == "again\n");
  CHECK(sink.dropped() == 1);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("logger: a vanished reader drops lines", "[logger]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  ::close(fds[0]);
  // The shim ignores SIGPIPE; here it is blocked for this thread and consumed after.
  sigset_t pipe_only, previous;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  REQUIRE(::pthread_sigmask(SIG_BLOCK, &pipe_only, &previous) == 0);
  shim::FdLogSink sink(fds[1]);
  sink.write("lost\n");
  timespec zero{};
  ::sigtimedwait(&pipe_only, nullptr, &zero);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  CHECK(sink.dropped() == 1);
  ::close(fds[1]);
}

TEST_CASE("logger: SystemClock tells the real time", "[logger]") {
  shim::SystemClock clock;
  const auto before = system_clock::now();
  const auto now = clock.now();
  CHECK(now >= before);
  CHECK(now - before < seconds(5));
}
