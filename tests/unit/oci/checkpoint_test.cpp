// Checkpoint / restore over an OCI CLI: CheckpointOptions decoding and mapping, the runc
// command lines the Go shim builds from them (go-runc v1.0.0 Checkpoint/Restore,
// containerd 1.6 pkg/process init.go), the state rules, and CliClient::checkpoint/restore
// against a fake runtime that fails like runc does when CRIU fails.
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "unit/isolated_child.h"
#include "unit/reaper_fixture.h"
#include "shim/oci/checkpoint_options.h"
#include "task/task_state.h"
#include "gocompat/go_compat.h"
#include "shim/oci/cli_client.h"
#include "process/posix_spawner.h"
#include "shim/process/work_pool.h"
#include "support/temp_dir.h"

namespace {

using shim::oci::CheckpointOptions;
using shim::oci::CliCommandLine;
using shim::oci::CliConfig;
using Argv = std::vector<std::string>;

const std::string kBundle = "/run/containerd/io.containerd.runtime.v2.task/default/t1";

CliCommandLine default_runc() {
  return CliCommandLine(CliConfig{.ns = "default", .bundle = kBundle});
}

Argv with_globals(const Argv& command) {
  Argv argv{"runc", "--root", "/run/containerd/runc/default", "--log", kBundle + "/log.json",
            "--log-format", "json"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

shim::pb::Any any_of(const std::string& type_url, const CheckpointOptions& options) {
  shim::pb::Any any;
  any.set_type_url(type_url);
  any.set_value(options.SerializeAsString());
  return any;
}

}  // namespace

TEST_CASE("CheckpointOptions Any: defaults, prefixes, wrong types", "[checkpoint]") {
  CheckpointOptions options;
  options.set_exit(true);
  options.set_work_path("/w");
  options.add_empty_namespaces("network");

  CheckpointOptions decoded;
  decoded.set_open_tcp(true);  // cleared by the decoder
  REQUIRE(shim::oci::decode_checkpoint_options(shim::pb::Any(), &decoded).ok());
  CHECK(decoded.SerializeAsString().empty());

  for (const char* url : {"containerd.runc.v1.CheckpointOptions",
                          "type.googleapis.com/containerd.runc.v1.CheckpointOptions"}) {
    REQUIRE(shim::oci::decode_checkpoint_options(any_of(url, options), &decoded).ok());
    CHECK(decoded.exit());
    CHECK(decoded.work_path() == "/w");
    REQUIRE(decoded.empty_namespaces_size() == 1);
    CHECK(decoded.empty_namespaces(0) == "network");
  }

  shim::Status status =
      shim::oci::decode_checkpoint_options(any_of("containerd.linux.runc.CheckpointOptions", options), &decoded);
  CHECK(status.code() == shim::Code::kNotFound);
  CHECK(status.message() == "type with url containerd.linux.runc.CheckpointOptions: not found");

  shim::pb::Any garbage;
  garbage.set_type_url("containerd.runc.v1.CheckpointOptions");
  garbage.set_value("\x0a\xff");  // field 1 length-delimited, truncated
  status = shim::oci::decode_checkpoint_options(garbage, &decoded);
  CHECK(status.code() == shim::Code::kUnknown);
  CHECK(decoded.SerializeAsString().empty());
}

TEST_CASE("CheckpointOptions map to the Go shim's runc checkpoint flags", "[checkpoint]") {
  CliCommandLine runc = default_runc();
  // No options (ctr task checkpoint without flags): leave running, the image dir from the
  // request, the work path chosen by CliClient (empty here).
  shim::oci::CheckpointArgs defaults = shim::oci::checkpoint_args("/img", CheckpointOptions());
  CHECK(defaults.leave_running);
  CHECK(defaults.work_path.empty());
  CHECK(runc.checkpoint("t1", defaults) ==
        with_globals({"checkpoint", "--image-path", "/img", "--leave-running", "t1"}));

  CheckpointOptions all;
  all.set_exit(true);
  all.set_open_tcp(true);
  all.set_external_unix_sockets(true);
  all.set_terminal(true);
  all.set_file_locks(true);
  all.add_empty_namespaces("network");
  all.add_empty_namespaces("ipc");
  all.set_cgroups_mode("soft");       // not forwarded by the Go shim
  all.set_image_path("/ignored");     // the request's path wins
  all.set_work_path("/work");
  all.set_parent_path("/parent");     // 2.4+ containerd; forwarded like the newer Go shim
  CHECK(runc.checkpoint("t1", shim::oci::checkpoint_args("/img", all)) ==
        with_globals({"checkpoint", "--image-path", "/img", "--work-path", "/work",
                      "--parent-path", "/parent", "--tcp-established", "--ext-unix-sk",
                      "--shell-job", "--file-locks", "--empty-ns", "network", "--empty-ns", "ipc",
                      "t1"}));
}

TEST_CASE("restore arguments fixed at Create and the restore command line", "[checkpoint]") {
  CliCommandLine runc = default_runc();
  shim::oci::RuncOptions options;
  shim::oci::RestoreArgs args = shim::oci::restore_args(kBundle, options, "/ckpt", "");
  CHECK(args.work_path == kBundle + "/work");  // Init.WorkDir, not .../criu-work
  CHECK(runc.restore("t1", args) ==
        with_globals({"restore", "--image-path", "/ckpt", "--work-path", kBundle + "/work",
                      "--detach", "--pid-file", kBundle + "/init.pid", "-no-subreaper",
                      "--bundle", kBundle, "t1"}));

  options.set_criu_work_path("/var/criu");
  options.set_no_pivot_root(true);
  options.set_no_new_keyring(true);  // create-only flag: not on restore
  args = shim::oci::restore_args(kBundle + "/", options, "/ckpt", "/parent");
  args.console_socket = "/run/user/0/pty1/pty.sock";
  CHECK(runc.restore("t1", args) ==
        with_globals({"restore", "--image-path", "/ckpt", "--work-path", "/var/criu",
                      "--parent-path", "/parent", "--detach", "--pid-file", kBundle + "/init.pid",
                      "--console-socket", "/run/user/0/pty1/pty.sock", "--no-pivot",
                      "-no-subreaper", "--bundle", kBundle, "t1"}));
}

TEST_CASE("Options.criu_path is the global --criu flag, as in the 1.6 Go shim", "[checkpoint]") {
  CliCommandLine runc(CliConfig{.ns = "default", .bundle = kBundle, .systemd_cgroup = true,
                                  .criu = "/opt/criu/criu"});
  CHECK(runc.checkpoint("t1", {.image_path = "/img"}) ==
        Argv{"runc", "--root", "/run/containerd/runc/default", "--log", kBundle + "/log.json",
             "--log-format", "json", "--criu", "/opt/criu/criu", "--systemd-cgroup", "checkpoint",
             "--image-path", "/img", "--leave-running", "t1"});
}

TEST_CASE("checkpoint is allowed when running or paused, with Go's errors otherwise", "[checkpoint]") {
  using shim::Operation;
  using shim::ProcessState;
  auto check = [](ProcessState state) {
    return shim::check_transition(state, Operation::kCheckpoint, true);
  };
  CHECK(check(ProcessState::kRunning).ok());
  CHECK(check(ProcessState::kPaused).ok());
  CHECK(check(ProcessState::kPausing).ok());
  CHECK(check(ProcessState::kCreated) == shim::unknown("cannot checkpoint a task in created state"));
  CHECK(check(ProcessState::kStopped) == shim::unknown("cannot checkpoint a stopped container"));
}

TEST_CASE("exec into an init follows Go's state table", "[checkpoint]") {
  using shim::Operation;
  using shim::ProcessState;
  auto check = [](ProcessState state) {
    return shim::check_transition(state, Operation::kExec, true);
  };
  // Go's createdState.Exec execs; only createdCheckpointState refuses (RuncService checks).
  CHECK(check(ProcessState::kCreated).ok());
  CHECK(check(ProcessState::kRunning).ok());
  CHECK(check(ProcessState::kPaused) == shim::unknown("cannot exec in a paused state"));
  CHECK(check(ProcessState::kPausing) == shim::unknown("cannot exec in a paused state"));
  CHECK(check(ProcessState::kStopped) == shim::unknown("cannot exec in a stopped state"));
}

namespace {

// Fails the way runc 1.1 fails when CRIU cannot dump: the error and the dump log path on
// stderr, CRIU's dump.log in the work dir. `ok` mode records the argv and succeeds.
constexpr std::string_view kFakeCriuRuntime = R"SH(#!/bin/sh
dir=$(dirname "$0")
printf '%s\n' "$@" > "$dir/argv"
work=
while [ $# -gt 0 ]; do
  if [ "$1" = --work-path ]; then work="$2"; fi
  if [ "$1" = --pid-file ]; then echo 4242 > "$2"; fi
  shift
done
if [ "$(cat "$dir/mode")" = fail ]; then
  mkdir -p "$work" && echo "criu dump log line" > "$work/dump.log"
  echo "criu failed: type DUMP errno 0" >&2
  echo "log file: $work/dump.log" >&2
  exit 1
fi
if [ -n "$work" ]; then mkdir -p "$work" && echo "work used" > "$dir/work-seen"; fi
exit 0
)SH";

template <class Work>
auto on_pool(shim::WorkPool& pool, Work work) -> decltype(work()) {
  auto task = std::make_shared<std::packaged_task<decltype(work())()>>(std::move(work));
  auto result = task->get_future();
  pool.post([task] { (*task)(); });
  return result.get();
}

std::string read_text(const std::string& path) {
  std::string content;
  if (!shim::go_read_file(path, &content).ok()) return "<unreadable>";
  return content;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

TEST_CASE("CliClient checkpoint: default work dir removed, CRIU failure text as Go", "[checkpoint]") {
  auto outcome = shim_test::run_in_child([](shim_test::ChildReport& report) {
    shim::test::TempDir dir("runc-ckpt-");
    const std::string fake = dir.sub("fake-runc");
    const std::string bundle = dir.sub("b1");
    report.check(shim::go_write_file(fake, kFakeCriuRuntime, 0755).ok(), "write fake runtime");
    report.check(::mkdir(bundle.c_str(), 0700) == 0 && ::mkdir((bundle + "/work").c_str(), 0700) == 0,
                 "bundle dirs");
    shim_test::LoopWithReaper loop;
    shim::PosixSpawner spawner;
    shim::WorkPool pool(1);
    shim::oci::CliClient runc(loop.reaper, spawner,
                               CliConfig{.binary = fake, .root = "/run/r", .ns = "ns", .bundle = bundle});
    const std::string default_work = bundle + "/work/criu-work";

    report.check(shim::go_write_file(dir.sub("mode"), "ok", 0644).ok(), "mode ok");
    shim::Status status = on_pool(pool, [&] { return runc.checkpoint("t1", {.image_path = dir.sub("img")}); });
    report.check(status.ok(), "checkpoint ok: " + status.to_string());
    report.check(read_text(dir.sub("argv")).find("--work-path\n" + default_work + "\n--leave-running\nt1\n") !=
                     std::string::npos,
                 "default work path: " + read_text(dir.sub("argv")));
    report.check(exists(dir.sub("work-seen")) && !exists(default_work), "default work dir removed after");

    report.check(shim::go_write_file(dir.sub("mode"), "fail", 0644).ok(), "mode fail");
    status = on_pool(pool, [&] { return runc.checkpoint("t1", {.image_path = dir.sub("img")}); });
    // go-runc's "<argv0> did not terminate successfully: exit status 1: <output>", first
    // line only, plus " path= <bundle>/criu-dump.log" (Go's criuError).
    const std::string expected = fmt::format(
        "{} did not terminate successfully: exit status 1: criu failed: type DUMP errno 0 path= {}/criu-dump.log",
        fake, bundle);
    report.check(status == shim::unknown(expected), "failure text: " + status.to_string());
    report.check(read_text(bundle + "/criu-dump.log") == "criu dump log line\n", "dump.log copied to the bundle");
    report.check(!exists(default_work), "default work dir removed after a failure too");

    const std::string own_work = dir.sub("own-work");
    status = on_pool(pool, [&] {
      return runc.checkpoint("t1", {.image_path = dir.sub("img"), .work_path = own_work, .leave_running = false});
    });
    report.check(!status.ok() && exists(own_work + "/dump.log"), "a given work dir is kept");
    report.check(read_text(dir.sub("argv")).ends_with("--work-path\n" + own_work + "\nt1\n"),
                 "exit: no --leave-running: " + read_text(dir.sub("argv")));

    report.check(shim::go_write_file(dir.sub("mode"), "ok", 0644).ok(), "mode ok");
    shim::oci::RestoreArgs restore = shim::oci::restore_args(bundle, {}, dir.sub("img"), "");
    status = on_pool(pool, [&] { return runc.restore("t1", restore, shim::oci::Stdio{}); });
    report.check(status.ok() && read_text(bundle + "/init.pid") == "4242\n", "restore writes the pid file");
    report.check(read_text(dir.sub("argv")).ends_with("-no-subreaper\n--bundle\n" + bundle + "\nt1\n"),
                 "restore argv: " + read_text(dir.sub("argv")));
    pool.stop();
  });
  shim_test::require_child_passed(outcome);
}
