// The `start` action: find or create the shim server for this task's group and print
// its address in the form the calling containerd reads (runtime/v2/shim.go,
// core/runtime/v2/shim.go).
//
// stdout carries only the answer and stderr nothing on success: containerd reads the
// combined output and waits for EOF on it, so the daemon gets /dev/null for 0-2.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include <fmt/format.h>

#include "process/posix_spawner.h"
#include "protocol/actions.h"
#include "protocol/bootstrap.h"
#include "protocol/mount_capability_answer.h"
#include "protocol/shim_sharing.h"
#include "protocol/start_answer.h"
#include "shim/fs.h"
#include "socket/grouping.h"
#include "socket/socket_address.h"
#include "socket/unix_listener.h"

namespace shim::detail {
namespace {

constexpr std::string_view kUnixScheme = "unix://";
// A shared shim that does not answer Reserve in this time is wedged: the task gets its own.
constexpr std::chrono::milliseconds kReserveTimeout{2000};
// Tries at the shared socket: each ending shim met removed its socket before answering.
constexpr int kSharedAttempts = 4;

// The shim a task's `start` binds or reuses: its group and socket, and what a daemon
// launched for it gets in its environment besides containerd's.
struct GroupShim {
  std::string group;
  std::string address;  // unix://<socket_path>
  std::string socket_path;
  std::vector<std::string> daemon_env;
  // A shared daemon this start launched: once it runs, other starts may have reserved
  // it, so a failure of ours leaves it (its reservation for us ends, then it ends).
  bool keep_on_abort = false;
};

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
// BootstrapParams when only that carried it. Sharing settings are start's alone.
std::vector<std::string> daemon_env(const StartContext& ctx) {
  std::vector<std::string> env;
  bool has_ttrpc = false;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("LIBSHIM_SHARED_")) continue;
    has_ttrpc = has_ttrpc || entry.starts_with("TTRPC_ADDRESS=");
    env.emplace_back(entry);
  }
  if (!has_ttrpc && !ctx.ttrpc_address.empty()) env.push_back("TTRPC_ADDRESS=" + ctx.ttrpc_address);
  return env;
}

SpawnRequest daemon_request(const StartContext& ctx, const GroupShim& shim, int listen_fd) {
  SpawnRequest request;
  request.path = self_executable();
  request.argv = {request.path, "-namespace", ctx.ns,          "-id",
                  shim.group,   "-address",   ctx.grpc_address};
  if (ctx.debug) request.argv.push_back("-debug");
  request.env = daemon_env(ctx);
  request.env->insert(request.env->end(), shim.daemon_env.begin(), shim.daemon_env.end());
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

Status launch(const StartContext& ctx, const DaemonOptions& options, const GroupShim& shim,
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
  if (Status s = spawner.spawn(daemon_request(ctx, shim, listen_fd), daemon); !s.ok()) return s;
  Status status;
  if (!options.cgroup.empty()) status = join_cgroup(daemon->pid, options.cgroup);
  if (status.ok() && options.adjust_oom_score) status = adjust_oom_score(daemon->pid);
  return status;
}

// On any error after the daemon was spawned: kill it and remove its socket, once it is
// gone (its pidfd readable, up to 1 s) and only if nothing answers there: a racing start
// may have bound a socket of its own at the path by then (remove_dead_socket).
int abort_start(Manager& manager, const Status& status, SpawnedProcess& daemon,
                const std::string& socket_path, bool keep_daemon = false) {
  if (daemon.pid > 0 && !keep_daemon) {
    daemon.handle.signal(SIGKILL).ignore_error();  // it may have exited already
    if (daemon.handle.has_pidfd()) {
      pollfd gone{daemon.handle.pidfd(), POLLIN, 0};
      while (::poll(&gone, 1, 1000) < 0 && errno == EINTR) {
      }
    } else {
      // No pidfd (before Linux 5.3): it is this process's child, so reap it, up to 1 s.
      for (int i = 0; i < 100 && ::waitpid(daemon.pid, nullptr, WNOHANG) == 0; ++i)
        ::usleep(10'000);
    }
    bool removed = false;
    remove_dead_socket(socket_path, &removed).ignore_error();  // best effort, as before
  }
  return fail(manager, status);
}

Status make_group_shim(const StartContext& ctx, std::string group, GroupShim* shim) {
  shim->group = std::move(group);
  if (Status s =
          socket_address(ctx.grpc_address, ctx.ns, shim->group, ctx.socket_dir, &shim->address);
      !s.ok()) {
    return s;
  }
  shim->socket_path = shim->address.substr(kUnixScheme.size());
  return {};
}

// Binds the shim's socket and launches its daemon, or finds a live shim there
// (*launched false): the group's shim already runs.
Status bind_or_find(const StartContext& ctx, const DaemonOptions& options, const ShimEnv& env,
                    const GroupShim& shim, SpawnedProcess* daemon, bool* launched) {
  ListenResult listener;
  if (Status s = listen_unix(shim.socket_path, &listener); !s.ok()) return s;
  *launched = listener.outcome == ListenOutcome::kBound;
  if (!*launched) return {};
  Status s = launch(ctx, options, shim, listener.fd, env, daemon);
  ::close(listener.fd);
  return s;
}

// The shared shim of the namespace, launched or reserved for this task (*shared). A
// reserved shim cannot end before containerd's Create; one that is ending removed its
// socket before it answered, so the next try binds a new shim. Otherwise *why_not: why
// the task cannot share (the shim is wedged, or is no shared libshim shim).
Status use_shared_shim(const StartContext& ctx, const DaemonOptions& options, const ShimEnv& env,
                       const GroupShim& shim, SpawnedProcess* daemon, bool* shared,
                       std::string* why_not) {
  for (int attempt = 1; attempt <= kSharedAttempts; ++attempt) {
    if (Status s = bind_or_find(ctx, options, env, shim, daemon, shared); !s.ok()) return s;
    if (*shared) return {};  // launched
    Status reserved = reserve_shared_shim(shim.address, ctx.id, ctx.bundle, kReserveTimeout);
    *shared = reserved.ok();
    if (*shared) return {};
    *why_not =
        fmt::format("shared shim {} (try {}): {}", shim.address, attempt, reserved.message());
    if (reserved.code() != Code::kUnavailable) return {};
    ::usleep(10'000);  // an ending shim removed its socket; another start may be binding
  }
  return {};
}

// The task's shim: its group's (bound or found live), or the namespace's shared shim,
// or, when that cannot take the task, a shim of the task's own. Never shared under
// SCHED_CORE: a shim's containers share its core-scheduling cookie, which is one
// container's (or pod's) alone.
Status find_or_launch(const StartContext& ctx, const DaemonOptions& options, const ShimEnv& env,
                      GroupShim* shim, SpawnedProcess* daemon) {
  const bool sharing = !options.shared_group.empty() && !env.sched_core;
  const std::string shared_key = sharing ? shared_group_key(options) : std::string();
  // The task id when the bundle has no config.json (a sandbox's).
  std::string group;
  if (Status s = bundle_group_id(ctx.bundle, ctx.id, &group, options.group_annotations, shared_key);
      !s.ok()) {
    return s;
  }
  if (Status s = make_group_shim(ctx, group, shim); !s.ok()) return s;
  if (!sharing || group != shared_key) {
    bool launched = false;
    return bind_or_find(ctx, options, env, *shim, daemon, &launched);
  }
  shim->daemon_env = {fmt::format("{}={}", kSharedLingerEnv,
                                  std::max<std::int64_t>(0, options.shared_linger.count())),
                      fmt::format("{}={}", kSharedFirstTaskEnv, ctx.id)};
  bool shared = false;
  std::string why_not;
  if (Status s = use_shared_shim(ctx, options, env, *shim, daemon, &shared, &why_not); !s.ok()) {
    return s;
  }
  shim->keep_on_abort = daemon->pid > 0;
  if (shared) return {};
  if (Status s = make_group_shim(ctx, ctx.id, shim); !s.ok()) return s;
  shim->daemon_env = {fmt::format("{}={}", kSharedFallbackEnv, why_not)};
  bool launched = false;
  return bind_or_find(ctx, options, env, *shim, daemon, &launched);
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

  GroupShim shim;
  SpawnedProcess daemon;
  if (Status s = find_or_launch(ctx, options, env, &shim, &daemon); !s.ok()) {
    return abort_start(manager, s, daemon, shim.socket_path);
  }
  const std::string& address = shim.address;
  const std::string& socket_path = shim.socket_path;
  // 1.6/1.7 read `address` on restart; 2.x migrates from it. Written for a reused shim too.
  if (Status s = write_file_atomic(ctx.bundle + "/address", address); !s.ok()) {
    return abort_start(manager, s, daemon, socket_path, shim.keep_on_abort);
  }
  if (Status s = answer(input, env, options, extensions, address); !s.ok()) {
    return abort_start(manager, s, daemon, socket_path, shim.keep_on_abort);
  }
  return 0;
}

}  // namespace shim::detail
