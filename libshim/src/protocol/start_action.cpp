// The `start` action: find or create the shim server for this task's group and print
// its address in the form the calling containerd reads (runtime/v2/shim.go,
// core/runtime/v2/shim.go).
//
// stdout carries only the answer and stderr nothing on success: containerd reads the
// combined output and waits for EOF on it, so the daemon gets /dev/null for 0-2.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <optional>

#include <fmt/format.h>

#include "process/posix_spawner.h"
#include "protocol/actions.h"
#include "protocol/bootstrap.h"
#include "protocol/mount_capability_answer.h"
#include "protocol/start_answer.h"
#include "shim/fs.h"
#include "socket/grouping.h"
#include "socket/socket_address.h"
#include "socket/unix_listener.h"

namespace shim::detail {
namespace {

constexpr std::string_view kUnixScheme = "unix://";

StartContext make_context(const ShimFlags& flags, const ShimEnv& env, const StartInput& input) {
  StartContext ctx;
  auto pick = [](const std::string& a, const std::string& b) { return !a.empty() ? a : b; };
  ctx.id = pick(flags.id, input.instance_id);
  ctx.ns = pick(flags.ns, pick(input.ns, env.ns));
  ctx.bundle = pick(flags.bundle, current_dir());
  ctx.grpc_address = pick(flags.address, pick(input.grpc_address, env.grpc_address));
  ctx.ttrpc_address = pick(env.ttrpc_address, input.ttrpc_address);
  ctx.socket_dir = input.socket_dir.value_or(std::string(kDefaultSocketDir));
  if (ctx.socket_dir.empty()) ctx.socket_dir = std::string(kDefaultSocketDir);
  ctx.debug = flags.debug || input.debug_requested();
  ctx.bootstrap_params = input.kind == StartInputKind::kBootstrapParams;
  ctx.options = input.options;
  return ctx;
}

std::string self_executable() {
  char buffer[4096];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buffer, static_cast<std::size_t>(n));
}

// The daemon inherits containerd's environment; TTRPC_ADDRESS is filled in from
// BootstrapParams when only that carried it.
std::vector<std::string> daemon_env(const StartContext& ctx) {
  std::vector<std::string> env;
  bool has_ttrpc = false;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    has_ttrpc = has_ttrpc || entry.starts_with("TTRPC_ADDRESS=");
    env.emplace_back(entry);
  }
  if (!has_ttrpc && !ctx.ttrpc_address.empty()) env.push_back("TTRPC_ADDRESS=" + ctx.ttrpc_address);
  return env;
}

SpawnRequest daemon_request(const StartContext& ctx, const std::string& group, int listen_fd) {
  SpawnRequest request;
  request.path = self_executable();
  request.argv = {request.path, "-namespace", ctx.ns, "-id", group, "-address", ctx.grpc_address};
  if (ctx.debug) request.argv.push_back("-debug");
  request.env = daemon_env(ctx);
  request.cwd = ctx.bundle;
  request.fds = {{3, listen_fd}};  // 0-2 become /dev/null: nothing holds containerd's pipe
  request.new_process_group = true;
  return request;
}

// The daemon is one step further from the OOM killer's favour than containerd: the
// start process inherited containerd's score, so ours + 1.
Status adjust_oom_score(pid_t pid) {
  std::string score_text;
  if (Status s = read_file("/proc/self/oom_score_adj", &score_text); !s.ok()) return s;
  int shim_score = std::min(std::atoi(score_text.c_str()) + 1, 1000);
  return write_existing_file(fmt::format("/proc/{}/oom_score_adj", pid),
                             std::to_string(shim_score));
}

// Moves `pid` into `cgroup` (a path relative to the hierarchy roots): the unified
// hierarchy when the machine has cgroup v2 only, else every v1 controller that has it.
Status join_cgroup(pid_t pid, const std::string& cgroup) {
  std::string pid_text = std::to_string(pid);
  if (::access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
    return write_existing_file(fmt::format("/sys/fs/cgroup/{}/cgroup.procs", cgroup), pid_text);
  }
  bool joined = false;
  for (const char* controller :
       {"cpu", "cpuacct", "memory", "pids", "blkio", "cpuset", "devices", "freezer", "systemd"}) {
    std::string path = fmt::format("/sys/fs/cgroup/{}/{}/cgroup.procs", controller, cgroup);
    if (::access(path.c_str(), F_OK) != 0) continue;
    if (Status s = write_existing_file(path, pid_text); !s.ok()) return s;
    joined = true;
  }
  if (!joined) {
    return not_found(fmt::format("join shim cgroup {}: no controller has it", cgroup));
  }
  return {};
}

// What the Manager asks of callers without BootstrapParams. The default asks nothing: a
// requested kPlainAddress would also turn 2.3+'s proto answer into a plain address
// (choose_start_answer_format), and DaemonOptions::legacy_answer is only about the others.
std::optional<StartAnswerFormat> requested_format(LegacyStartAnswer legacy) {
  switch (legacy) {
    case LegacyStartAnswer::kJsonVersion2:
      return StartAnswerFormat::kJsonV2;
    case LegacyStartAnswer::kJsonVersion3:
      return StartAnswerFormat::kJsonV3;
    case LegacyStartAnswer::kPlainAddress:
      break;
  }
  return std::nullopt;
}

Status answer(const StartInput& input, const ShimEnv& env, const DaemonOptions& options,
              const std::vector<shim::pb::Any>& extensions, const std::string& address) {
  StartAnswerFormat format =
      choose_start_answer_format(input.kind, env, requested_format(options.legacy_answer));
  std::string bytes;
  // libshim serves task API v2 and v3 alike; a 2.3+ caller gets version 3 (sandbox-aware).
  int version = format == StartAnswerFormat::kProtoBootstrapResult ? 3 : 2;
  if (Status s = format_start_answer(format, address, version, "ttrpc", &bytes, extensions);
      !s.ok()) {
    return s;
  }
  if (!write_fd(STDOUT_FILENO, bytes))
    return Status(Code::kUnknown, "write start answer to stdout");
  return {};
}

Status launch(const StartContext& ctx, const DaemonOptions& options, const std::string& group,
              int listen_fd, const ShimEnv& env, SpawnedProcess* daemon) {
  if (env.sched_core) {
    // A core-scheduling cookie for our process group, inherited by the daemon and so by
    // the containers it starts (PR_SCHED_CORE = 62, CREATE = 1, PIDTYPE_PGID = 2).
    if (::prctl(62, 1, 0, 2, 0) != 0) {
      return Status(Code::kUnknown,
                    fmt::format("enable sched core support: {}", std::strerror(errno)));
    }
  }
  PosixSpawner spawner;
  if (Status s = spawner.spawn(daemon_request(ctx, group, listen_fd), daemon); !s.ok()) return s;
  Status status;
  if (!options.cgroup.empty()) status = join_cgroup(daemon->pid, options.cgroup);
  if (status.ok() && options.adjust_oom_score) status = adjust_oom_score(daemon->pid);
  return status;
}

// On any error after the daemon was spawned: kill it and remove its socket.
int abort_start(Manager& manager, const Status& status, SpawnedProcess& daemon,
                const std::string& socket_path) {
  if (daemon.pid > 0) {
    daemon.handle.signal(SIGKILL).ignore_error();  // it may have exited already
    ::unlink(socket_path.c_str());
  }
  return fail(manager, status);
}

}  // namespace

int run_start(const ShimFlags& flags, const ShimEnv& env, Manager& manager) {
  StartInput input = classify_start_stdin(read_stdin(kMaxStartStdinBytes));
  StartContext ctx = make_context(flags, env, input);
  if (ctx.ns.empty()) {
    return fail(manager, Status(Code::kInvalidArgument, "shim namespace cannot be empty"));
  }
  DaemonOptions options;
  if (Status s = daemon_options_of(manager, ctx, &options); !s.ok()) return fail(manager, s);
  std::vector<shim::pb::Any> extensions;
  if (Status s = start_answer_extensions(manager, ctx.options, &extensions); !s.ok()) {
    return fail(manager, s);
  }

  std::string group;  // the task id when the bundle has no config.json (a sandbox's)
  if (Status s = bundle_group_id(ctx.bundle, ctx.id, &group, options.group_annotations); !s.ok()) {
    return fail(manager, s);
  }
  std::string address;
  if (Status s = socket_address(ctx.grpc_address, ctx.ns, group, ctx.socket_dir, &address);
      !s.ok()) {
    return fail(manager, s);
  }
  std::string socket_path = address.substr(kUnixScheme.size());

  ListenResult listener;
  if (Status s = listen_unix(socket_path, &listener); !s.ok()) return fail(manager, s);
  SpawnedProcess daemon;
  if (listener.outcome == ListenOutcome::kBound) {
    Status s = launch(ctx, options, group, listener.fd, env, &daemon);
    ::close(listener.fd);
    if (!s.ok()) return abort_start(manager, s, daemon, socket_path);
  }
  // 1.6/1.7 read `address` on restart; 2.x migrates from it. Written for a reused shim too.
  if (Status s = write_file_atomic(ctx.bundle + "/address", address); !s.ok()) {
    return abort_start(manager, s, daemon, socket_path);
  }
  if (Status s = answer(input, env, options, extensions, address); !s.ok()) {
    return abort_start(manager, s, daemon, socket_path);
  }
  return 0;
}

}  // namespace shim::detail
