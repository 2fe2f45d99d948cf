// CliClient end to end: the real runc (--version, features) and a fake runtime script
// that records its argv, environment and stdin and fails on demand, all run through a
// real SignalfdReaper + WorkPool in a forked child (the reaper changes process-wide state).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "unit/isolated_child.h"
#include "unit/reaper_fixture.h"
#include "gocompat/go_compat.h"
#include "shim/oci/cli_client.h"
#include "process/posix_spawner.h"
#include "shim/process/work_pool.h"
#include "support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using shim::oci::CliClient;
using shim::oci::CliConfig;
using shim_test::ChildReport;

// A runc stand-in. The behaviour comes from the file `mode` next to it.
constexpr std::string_view kFakeRuntime = R"SH(#!/bin/sh
dir=$(dirname "$0")
printf '%s\n' "$@" > "$dir/argv"
env > "$dir/env"
log="$4"
case "$(cat "$dir/mode")" in
  ok) exit 0 ;;
  error-log)
    echo '{"level":"error","msg":"container not created","time":"2024-01-01T00:00:00Z"}' >> "$log"
    echo "to stderr" >&2; exit 1 ;;
  info-log) echo '{"level":"info","msg":"nothing"}' >> "$log"; echo out; echo err >&2; exit 2 ;;
  not-running) echo "container not running" >&2; exit 1 ;;
  not-exist) echo 'container "t1" does not exist' >&2; exit 1 ;;
  stdin) cat > "$dir/stdin" ;;
  process)
    while [ $# -gt 0 ]; do
      if [ "$1" = --process ]; then cp "$2" "$dir/process"; echo "$2" > "$dir/process-path"; fi
      shift
    done ;;
  ps) echo '[1,22,333]' ;;
  state) echo '{"ociVersion":"1.0.2","id":"t1","pid":42,"status":"running","bundle":"/b","rootfs":"/b/rootfs"}' ;;
  hello) echo "hello on stdout"; echo "hello on stderr" >&2; exit 3 ;;
  sleep) exec sleep 30 ;;
esac
)SH";

std::string read_text(const std::string& path) {
  std::string content;
  if (!shim::go_read_file(path, &content).ok()) return "<unreadable>";
  return content;
}

// Runs `work` on the pool (where runc calls belong) and waits for its result.
template <class Work>
auto on_pool(shim::WorkPool& pool, Work work) -> decltype(work()) {
  auto task = std::make_shared<std::packaged_task<decltype(work())()>>(std::move(work));
  auto result = task->get_future();
  pool.post([task] { (*task)(); });
  return result.get();
}

std::string lines(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) text += arg + "\n";
  return text;
}

}  // namespace

TEST_CASE("CliClient runs the real runc through the reaper", "[runc]") {
  if (::access("/usr/sbin/runc", X_OK) != 0 && ::access("/usr/bin/runc", X_OK) != 0) {
    WARN("runc is not installed: skipped");
    return;
  }
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    shim_test::LoopWithReaper loop;  // blocks SIGCHLD before any thread starts
    report.check(loop.start_status.ok(), "reaper start: " + loop.start_status.to_string());
    shim_test::ExitCollector fanned;
    shim::Subscription subscription = loop.reaper.subscribe(fanned.callback());
    shim::PosixSpawner spawner;
    shim::WorkPool pool(2);
    shim::test::TempDir bundle("runc-cli-");
    CliClient runc(loop.reaper, spawner, CliConfig{.ns = "default", .bundle = bundle.path()});

    shim::oci::CliVersion version;
    shim::Status status = on_pool(pool, [&] { return runc.version(&version); });
    report.check(status.ok(), "runc --version: " + status.to_string());
    report.check(!version.runc.empty() && !version.spec.empty(),
                 fmt::format("version '{}' commit '{}' spec '{}'", version.runc, version.commit,
                             version.spec));
    report.note("runc " + version.runc);

    std::string features;
    status = on_pool(pool, [&] {
      return shim::oci::cli_features(loop.reaper, spawner, "", &features);
    });
    report.check(status.ok() && features.find("\"ociVersionMin\"") != std::string::npos,
                 "runc features: " + status.to_string());
    status = on_pool(pool, [&] {
      return shim::oci::cli_features(loop.reaper, spawner, "no-such-runtime-xyz", &features);
    });
    report.check(status.message() ==
                     "failed to look up the path of \"no-such-runtime-xyz\": exec: "
                     "\"no-such-runtime-xyz\": executable file not found in $PATH",
                 status.message());

    pool.stop();
    report.check(loop.reaper.stats().claimed >= 2, "runc's exits were claimed");
    report.check(!fanned.wait_for_count(1, 100ms), "no runc exit reached subscribers");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("CliClient command execution, stdio, errors", "[runc]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    shim::test::TempDir dir("runc-fake-");
    const std::string fake = dir.sub("fake-runc");
    report.check(shim::go_write_file(fake, kFakeRuntime, 0755).ok(), "write fake runtime");
    report.check(::mkdir(dir.sub("xdg").c_str(), 0700) == 0 && ::mkdir(dir.sub("b1").c_str(), 0700) == 0 &&
                     ::mkdir(dir.sub("b2").c_str(), 0700) == 0,
                 "dirs");
    // Environment first: threads come next.
    ::setenv("XDG_RUNTIME_DIR", dir.sub("xdg").c_str(), 1);
    ::setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
    ::setenv("FAKE_MARKER", "kept", 1);

    shim_test::LoopWithReaper loop;
    shim_test::ExitCollector fanned;
    shim::Subscription subscription = loop.reaper.subscribe(fanned.callback());
    shim::PosixSpawner spawner;
    shim::WorkPool pool(2);
    auto set_mode = [&](const std::string& mode) {
      report.check(shim::go_write_file(dir.sub("mode"), mode, 0644).ok(), "mode " + mode);
    };
    CliConfig config{.binary = fake, .root = "/run/r", .ns = "ns", .bundle = dir.sub("b1")};
    CliClient runc(loop.reaper, spawner, config);
    const std::string failed = fake + " did not terminate successfully: ";

    set_mode("ok");
    shim::Status status = on_pool(pool, [&] { return runc.start("t1"); });
    report.check(status.ok(), "start ok: " + status.to_string());
    report.check(read_text(dir.sub("argv")) ==
                     lines({"--root", "/run/r/ns", "--log", dir.sub("b1") + "/log.json",
                            "--log-format", "json", "start", "t1"}),
                 "argv: " + read_text(dir.sub("argv")));
    std::string env = read_text(dir.sub("env"));
    report.check(env.find("NOTIFY_SOCKET") == std::string::npos &&
                     env.find("FAKE_MARKER=kept") != std::string::npos,
                 "environment without NOTIFY_SOCKET");

    set_mode("error-log");
    status = on_pool(pool, [&] { return runc.start("t1"); });
    report.check(status == shim::unknown("OCI runtime start failed: container not created"),
                 "log.json error: " + status.to_string());
    set_mode("info-log");  // log.json keeps the earlier error line: the Go shim reports it
    status = on_pool(pool, [&] { return runc.pause("t1"); });
    report.check(status.message() == "OCI runtime pause failed: container not created",
                 "stale error: " + status.message());

    CliConfig config2 = config;
    config2.bundle = dir.sub("b2");
    CliClient runc2(loop.reaper, spawner, config2);
    status = on_pool(pool, [&] { return runc2.resume("t1"); });
    report.check(status.message() == "OCI runtime resume failed: " + failed + "exit status 2: out\nerr\n",
                 "no error line: " + status.message());

    set_mode("not-running");
    status = on_pool(pool, [&] { return runc.kill("t1", 15, false); });
    report.check(status == shim::not_found("process already finished"), "kill: " + status.to_string());
    set_mode("not-exist");
    status = on_pool(pool, [&] { return runc.kill("t1", 9, true); });
    report.check(status == shim::not_found("no such container"), "kill gone: " + status.to_string());
    status = on_pool(pool, [&] { return runc.remove("t1", true); });
    report.check(status.ok(), "delete of a missing container: " + status.to_string());

    set_mode("stdin");
    status = on_pool(pool, [&] { return runc.update("t1", R"({"cpu":{"shares":512}})"); });
    report.check(status.ok() && read_text(dir.sub("stdin")) == "{\"cpu\":{\"shares\":512}}\n",
                 "update stdin: " + read_text(dir.sub("stdin")));

    set_mode("process");
    const std::string process = R"({"args":["sh"],"cwd":"/","terminal":false})";
    status = on_pool(pool, [&] { return runc.exec("t1", "e1", process, "", shim::oci::Stdio{}); });
    std::string process_path = read_text(dir.sub("process-path"));
    report.check(status.ok(), "exec: " + status.to_string());
    report.check(read_text(dir.sub("process")) == process + "\n", "process file content");
    report.check(process_path.starts_with(dir.sub("xdg") + "/runc-process"),
                 "process file in XDG_RUNTIME_DIR: " + process_path);
    process_path = std::string(shim::go_trim_space(process_path));
    report.check(::access(process_path.c_str(), F_OK) != 0, "process file removed");
    report.check(read_text(dir.sub("argv")).ends_with(
                     lines({"--detach", "--pid-file", dir.sub("b1") + "/e1.pid", "t1"})),
                 "exec argv: " + read_text(dir.sub("argv")));

    set_mode("hello");
    int pipe_fds[2];
    report.check(::pipe2(pipe_fds, O_CLOEXEC) == 0, "pipe");
    status = on_pool(pool, [&] {
      return runc2.create("t1", {}, shim::oci::Stdio{-1, pipe_fds[1], pipe_fds[1]});
    });
    ::close(pipe_fds[1]);
    char buffer[256] = {};
    ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer - 1);
    ::close(pipe_fds[0]);
    report.check(status.message() == "OCI runtime create failed: " + failed + "exit status 3",
                 "create with stdio: " + status.message());
    report.check(n > 0 && std::string(buffer) == "hello on stdout\nhello on stderr\n",
                 "runtime wrote to the given stdio");
    status = on_pool(pool, [&] { return runc2.create("t1", {}, std::nullopt); });
    report.check(status.message() == "OCI runtime create failed: " + failed +
                                         "exit status 3: hello on stdout\nhello on stderr\n",
                 "create without stdio captures: " + status.message());

    set_mode("ps");
    std::vector<int> pids;
    status = on_pool(pool, [&] { return runc.ps("t1", &pids); });
    report.check(status.ok() && pids == std::vector<int>{1, 22, 333}, "ps: " + status.to_string());
    set_mode("state");
    shim::oci::CliState state;
    status = on_pool(pool, [&] { return runc.state("t1", &state); });
    report.check(status.ok() && state.pid == 42 && state.status == "running" && state.id == "t1",
                 "state: " + status.to_string());

    CliClient missing(loop.reaper, spawner,
                       CliConfig{.binary = "no-such-runtime-xyz", .ns = "ns", .bundle = dir.sub("b3")});
    status = on_pool(pool, [&] { return missing.create("t1", {}, shim::oci::Stdio{}); });
    report.check(status.message() ==
                     "OCI runtime create failed: unable to retrieve OCI runtime error (open " +
                         dir.sub("b3") + "/log.json: no such file or directory): exec: "
                                         "\"no-such-runtime-xyz\": executable file not found in $PATH",
                 "missing binary: " + status.message());
    status = on_pool(pool, [&] { return missing.start("t1"); });
    report.check(status.message().ends_with("executable file not found in $PATH: <nil>"),
                 "missing binary, captured: " + status.message());

    set_mode("sleep");
    CliClient bounded(loop.reaper, spawner, config2, {.timeout = 200ms});
    auto started = std::chrono::steady_clock::now();
    status = on_pool(pool, [&] { return bounded.start("t1"); });
    report.check(status.message().find("exit status 137") != std::string::npos,
                 "timeout kills: " + status.message());
    report.check(std::chrono::steady_clock::now() - started < 5s, "timeout took too long");

    pool.stop();
    report.check(!fanned.wait_for_count(1, 100ms),
                 fmt::format("{} runtime exit(s) reached subscribers", fanned.size()));
  });
  shim_test::require_child_passed(outcome);
}
