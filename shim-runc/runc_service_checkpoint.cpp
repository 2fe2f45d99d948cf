// RuncService: Checkpoint, and Start of a container created from a checkpoint
// (protocol-facts 8.7, 8.8, 8.16), with the Go runc shim's states and error texts.
//
// Checkpoint runs `runc checkpoint` on the pool; with CheckpointOptions.exit runc stops
// the container itself (no --leave-running: CRIU kills the tree and runc drops its
// state), so the init's exit comes through the reaper like any other exit and the
// container ends up stopped, with the usual /tasks/exit. No /tasks/checkpointed event
// (the Go shim sends none).
//
// Restore: Create with `checkpoint` set only prepares (IO pipes, options, rootfs) and
// keeps the `runc restore` arguments in Container::restore; the init reports "created".
// Start runs `runc restore --detach ... -no-subreaper` instead of `runc start`: runc
// exits once the tree is restored and the restored init is reparented to us (we are the
// subreaper), so its exit reaches our reaper like a created init's would. The IO made at
// Create is handed to the restore: its pipes, or with a terminal its --console-socket
// (the pty master is received after the restore, as after a create).
#include <cstdlib>
#include <functional>

#include <fmt/format.h>

#include "shim-runc/checkpoint_options.h"
#include "shim-runc/runc_service.h"
#include "shim/fs.h"
#include "shim/logger.h"
#include "shim/work_pool.h"

namespace runc_shim {
namespace {

// Go's runc.ReadPidFile as wrapped by the restore path.
shim::Status read_restored_pid(const std::string& path, std::uint32_t* pid) {
  std::string text;
  shim::Status status = shim::read_file(path, &text);
  long value = status.ok() ? std::strtol(text.c_str(), nullptr, 10) : 0;
  if (status.ok() && value <= 0) status = shim::unknown(fmt::format("invalid pid {:?} in {}", text, path));
  if (!status.ok()) {
    return shim::unknown(fmt::format("failed to retrieve OCI runtime container pid: {}", status.message()));
  }
  *pid = static_cast<std::uint32_t>(value);
  return {};
}

struct RestoreResult {
  shim::Status status;
  std::uint32_t pid = 0;
  std::optional<CgroupPaths> cgroup;
};

}  // namespace

void RuncService::checkpoint(const CallInfo&, task::CheckpointTaskRequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  CheckpointOptions options;
  if (request.has_options()) {
    if (auto s = decode_checkpoint_options(request.options(), &options); !s.ok()) return reply.fail(s);
  }
  if (auto s = check_transition(container->init.state, Operation::kCheckpoint, true); !s.ok()) {
    return reply.fail(s);
  }
  auto work = [runc = container->runc, id = container->id,
               args = checkpoint_args(request.path(), options)]() mutable { return runc.checkpoint(id, args); };
  auto done = [reply](shim::Status status) {
    if (!status.ok()) return reply.fail(status);
    reply(Empty());
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::start_restored(Container& container, Reply<task::StartResponse> reply) {
  container.init.busy = true;
  auto token = events_.begin_start({container.id, ""});
  // Go hands `runc restore` the create-time pipes (null IO: /dev/null; a terminal: none,
  // the pty comes through --console-socket) and never captures its output.
  std::optional<Stdio> stdio;
  std::function<shim::Status()> receive_console = [] { return shim::Status(); };
  RestoreArgs args = *container.restore;
  if (ProcessIO* io = container.init.io.get()) {
    if (!io->spec().terminal) stdio = Stdio{io->runtime_stdin(), io->runtime_stdout(), io->runtime_stderr()};
    args.console_socket = io->console_socket_path();
    receive_console = io->console_receiver();
  }
  auto work = [runc = container.runc, id = container.id, args, stdio, receive_console]() mutable {
    RestoreResult result;
    result.status = runc.restore(id, args, stdio);
    if (result.status.ok()) result.status = receive_console();  // runc sent it before returning
    if (result.status.ok()) result.status = read_restored_pid(runc.command_line().init_pid_file(), &result.pid);
    if (result.status.ok()) {
      CgroupFs fs;
      CgroupPaths paths;
      // Go loads the cgroup at Start when Create had no pid; a failure is only logged.
      if (load_cgroup(fs, host_cgroup_version(fs.root), static_cast<int>(result.pid), &paths).ok()) {
        result.cgroup = std::move(paths);
      }
    }
    return result;
  };
  auto done = [this, id = container.id, token, reply](RestoreResult result) {
    Container* c = nullptr;
    if (!find(id, &c).ok()) {
      events_.start_failed(token);
      return reply.fail(shim::not_found("container not created"));
    }
    c->init.busy = false;
    if (c->init.io) {
      c->init.io->close_runtime_ends();  // runc and the restored tree hold their own copies
      if (result.status.ok()) result.status = c->init.io->start();
    }
    if (!result.status.ok()) {
      // Still "created checkpoint", as in Go: a later Start tries the restore again.
      events_.start_failed(token);
      return reply.fail(result.status);
    }
    c->restore.reset();
    c->init.pid = result.pid;
    c->init.state = ProcessState::kRunning;
    if (!c->cgroup) c->cgroup = std::move(result.cgroup);
    if (c->cgroup) {
      if (auto s = oom_.add(id, *c->cgroup); !s.ok()) {
        context_.logger.warn("add cg to OOM monitor", {{"id", id}, {"error", s.message()}});
      }
    }
    task::StartResponse response;
    response.set_pid(result.pid);
    events_.start_succeeded(token, result.pid);  // may report an early exit right away
    reply(response);
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

}  // namespace runc_shim
