// shim-runc with gVisor's runsc as BinaryName, side by side with the Go shim on the same
// steps. runsc runs through tests/support/runsc-no-network.sh (`--network=none`): with its
// default sandbox network it cannot start a `ctr run` container, which the second case
// shows (the same way under both shims). What works and what does not is written up in
// README.md ("Other runtimes"). Skipped where runsc is missing or cannot start a sandbox.
#include <algorithm>
#include <regex>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/any.pb.h"
#include "support/runc_e2e.h"
#include "support/runtime_binary.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

// runsc cannot run here: not installed, or its sandbox (ptrace platform) cannot start.
std::optional<std::string> runsc_unavailable(const std::string& scratch_dir) {
  if (auto why = runtime_binary_unavailable(runsc_wrapper_path())) return why;
  CommandResult probe = run_command(
      {runsc_wrapper_path(), "--root", scratch_dir + "/runsc-probe", "do", "/bin/true"});
  if (!probe.ok()) return fmt::format("runsc cannot start a sandbox here: {}", probe.describe());
  return std::nullopt;
}

// `ctr run <flags> ... --runc-binary <binary> --rootfs <rootfs> <id> <cmd>`, without
// run_flags()'s $LIBSHIM_TEST_RUNC_BINARY.
std::vector<std::string> run_with(const RuncE2e& s, const std::string& binary,
                                  const std::vector<std::string>& flags, const std::string& id,
                                  const std::vector<std::string>& cmd) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--fifo-dir", s.fx.fifo_dir(), "--runc-root", s.fx.runc_root(),
                           "--runc-binary", binary, "--rootfs", s.rootfs, id});
  args.insert(args.end(), cmd.begin(), cmd.end());
  return args;
}

// Update (ctr 1.6 has no update command) straight to the shim serving `id`.
Status update_pids_limit(const RuncE2e& s, const std::string& id) {
  containerd::task::v2::UpdateTaskRequest request;
  request.set_id(id);
  request.mutable_resources()->set_type_url(
      "types.containerd.io/opencontainers/runtime-spec/1/LinuxResources");
  request.mutable_resources()->set_value(R"({"pids":{"limit":64}})");
  return call_task_api(s.fx.shim_address(id), s.fx.ns(), "Update", request.SerializeAsString())
      .status;
}

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

struct Observed {
  CommandResult run_rm;        // ctr run --rm: output and exit code
  CommandResult stdin_run;     // stdin through the sandbox
  CommandResult exec;          // ctr task exec in a running sandbox
  std::size_t ps_lines = 0;    // ctr task ps (header + processes)
  std::string paused, resumed; // task status after pause / resume
  bool metrics_have_memory = false;
  std::string update_error;    // Update: runsc has no `update` command
  std::string exit_line_status;
  std::vector<std::string> topics;
};

Observed observe_runsc(ShimUnderTest shim) {
  RuncE2e s(shim);
  const std::string runsc = runsc_wrapper_path();
  Observed o;
  auto events = s.fx.subscribe_events();
  o.run_rm = s.fx.ctr(run_with(s, runsc, {"--rm"}, "rs-rm", {"/bin/sh", "-c", "echo out; exit 3"}));

  const std::string input = "abcdefghij0123456789";
  std::vector<std::string> argv = {s.fx.ctr_bin(), "--address", s.fx.grpc_address(), "-n",
                                   s.fx.ns()};
  for (const auto& arg : run_with(s, runsc, {"--rm"}, "rs-in", {"/bin/head", "-c", "20"})) {
    argv.push_back(arg);
  }
  o.stdin_run = run_command(argv, {.timeout = 60s, .stdin_data = input});

  const std::string id = "rs-d";
  s.fx.ctr_ok(run_with(s, runsc, {"-d"}, id,
                       {"/bin/sh", "-c", "trap 'exit 4' TERM; /bin/sleep 600 & wait"}));
  o.exec = s.fx.ctr({"task", "exec", "--exec-id", "x1", id, "/bin/sh", "-c", "echo ex; exit 5"});
  o.ps_lines = count_lines(s.fx.ctr({"task", "ps", id}).out);
  s.fx.ctr_ok({"task", "pause", id});
  o.paused = s.task_status(id);
  s.fx.ctr_ok({"task", "resume", id});
  o.resumed = s.task_status(id);
  o.metrics_have_memory =
      s.fx.ctr({"task", "metrics", id}).out.find("memory.usage_in_bytes") != std::string::npos;
  o.update_error = update_pids_limit(s, id).message();
  s.fx.ctr_ok({"task", "kill", id});
  if (auto line = events->wait_for_line({"/tasks/exit", fmt::format("\"id\":\"{}\"", id)}, 15s)) {
    auto at = line->find("\"exit_status\":");
    o.exit_line_status = at == std::string::npos ? "none" : line->substr(at, 15);
  }
  s.wait_status(id, "STOPPED", 10s);
  s.fx.ctr_ok({"task", "rm", id});
  events->wait_for_line({"/tasks/delete", fmt::format("\"{}\"", id)}, 5s);
  o.topics = event_topics_for(*events, id);
  return o;
}

TEST_CASE("runsc runs exec ps pause resume metrics and kill as under the Go shim",
          "[runc][runsc]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  {
    RuncE2e probe;
    if (auto why = runsc_unavailable(probe.fx.dir())) LIBSHIM_SKIP(*why);
  }
  Observed ours = observe_runsc(ShimUnderTest::kOurs);
  Observed go = observe_runsc(ShimUnderTest::kGo);
  INFO("ours run: " << ours.run_rm.describe() << "\ngo run:   " << go.run_rm.describe());
  CHECK(ours.run_rm.exit_code == 3);
  CHECK(ours.run_rm.out == "out\n");
  CHECK(ours.run_rm.out == go.run_rm.out);
  CHECK(ours.run_rm.exit_code == go.run_rm.exit_code);

  INFO("ours stdin: " << ours.stdin_run.describe());
  CHECK(ours.stdin_run.exit_code == 0);
  CHECK(ours.stdin_run.out == "abcdefghij0123456789");
  CHECK(ours.stdin_run.out == go.stdin_run.out);

  INFO("ours exec: " << ours.exec.describe());
  CHECK(ours.exec.exit_code == 5);
  CHECK(ours.exec.out == "ex\n");
  CHECK(ours.exec.out == go.exec.out);
  CHECK(ours.exec.exit_code == go.exec.exit_code);

  CHECK(ours.ps_lines >= 3);  // header, the shell, sleep (sandbox pids)
  CHECK(ours.ps_lines == go.ps_lines);
  CHECK(ours.paused == "PAUSED");
  CHECK(ours.resumed == "RUNNING");
  CHECK(ours.paused == go.paused);
  CHECK(ours.resumed == go.resumed);
  CHECK(ours.metrics_have_memory);
  CHECK(ours.metrics_have_memory == go.metrics_have_memory);

  // runsc has no `update` command: both shims report the runtime's failure the same way.
  INFO("update ours: " << ours.update_error << "\nupdate go:   " << go.update_error);
  CHECK_FALSE(ours.update_error.empty());
  CHECK(ours.update_error == go.update_error);

  CHECK(ours.exit_line_status == "\"exit_status\":4");
  CHECK(ours.exit_line_status == go.exit_line_status);
  CHECK(ours.topics == std::vector<std::string>{"/tasks/create", "/tasks/start",
                                                "/tasks/exec-added", "/tasks/exec-started",
                                                "/tasks/exit", "/tasks/paused", "/tasks/resumed",
                                                "/tasks/exit", "/tasks/delete"});
  CHECK(ours.topics == go.topics);
}

// What plain runsc (default sandbox network) does under each shim: create works, start
// fails, and the task then stays CREATED because runsc cannot signal a created sandbox.
struct PlainRunsc {
  CommandResult run;
  std::string status_after_run;
  CommandResult force_remove;
  std::string status_after_cleanup;
};

// The host pid in runsc's message ("/proc/<pid>/ns/net") differs from run to run.
std::string without_pids(const std::string& text) {
  return std::regex_replace(text, std::regex("/proc/[0-9]+/"), "/proc/PID/");
}

PlainRunsc observe_plain_runsc(ShimUnderTest shim) {
  RuncE2e s(shim);
  PlainRunsc o;
  o.run = s.fx.ctr(run_with(s, "runsc", {"--rm"}, "rs-net", {"/bin/true"}));
  o.status_after_run = s.task_status("rs-net");
  o.force_remove = s.fx.ctr({"task", "rm", "-f", "rs-net"});
  // Clean up as an operator would: runsc's own forced delete, then containerd's.
  run_command({"runsc", "--root", fmt::format("{}/{}", s.fx.runc_root(), s.fx.ns()), "delete",
               "--force", "rs-net"});
  s.fx.ctr({"task", "rm", "rs-net"});
  s.fx.ctr({"containers", "rm", "rs-net"});
  o.status_after_cleanup = s.task_status("rs-net");
  return o;
}

TEST_CASE("plain runsc fails start in a ctr network namespace as under the Go shim",
          "[runc][runsc]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  {
    RuncE2e probe;
    if (auto why = runsc_unavailable(probe.fx.dir())) LIBSHIM_SKIP(*why);
  }
  PlainRunsc ours = observe_plain_runsc(ShimUnderTest::kOurs);
  PlainRunsc go = observe_plain_runsc(ShimUnderTest::kGo);
  INFO("ours: " << ours.run.describe() << "\ngo:   " << go.run.describe());
  CHECK(ours.run.exit_code == 1);
  CHECK(ours.run.err.find("ctr: OCI runtime start failed: ") == 0);
  CHECK(ours.run.err.find("cannot run with network enabled in root network namespace") !=
        std::string::npos);
  CHECK(without_pids(ours.run.err) == without_pids(go.run.err));
  CHECK(ours.status_after_run == "CREATED");
  CHECK(ours.status_after_run == go.status_after_run);
  INFO("rm -f ours: " << ours.force_remove.describe() << "\nrm -f go:   "
                      << go.force_remove.describe());
  CHECK(ours.force_remove.exit_code != 0);
  CHECK(ours.force_remove.err.find("cannot signal container \"rs-net\" in state created") !=
        std::string::npos);
  // ctr logs the error twice: a timestamped logrus line, then "ctr: <error>".
  auto ctr_line = [](const std::string& err) { return err.substr(err.find("\nctr: ") + 1); };
  CHECK(ctr_line(ours.force_remove.err) == ctr_line(go.force_remove.err));
  CHECK(ours.status_after_cleanup.empty());
  CHECK(go.status_after_cleanup.empty());
}

}  // namespace
}  // namespace shim::test
