#include "shim-runc/runc_service.h"

#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "shim/pb/runc/runc_options.pb.h"
#include "shim-runc/checkpoint_options.h"
#include "shim-runc/go_json_syntax.h"
#include "shim-runc/mount.h"
#include "shim-runc/runtime_error.h"
#include "shim/fs.h"
#include "shim/logger.h"
#include "shim/work_pool.h"

namespace runc_shim {
namespace {

constexpr auto kIoDrainTimeout = std::chrono::seconds(2);  // as the Go shim on Delete

// The runtime's stdio for create/exec: the pipes, or none with a terminal (go-runc then
// captures runc's output for the error text; the process gets the pty).
std::optional<Stdio> runtime_stdio(const ProcessIO& io) {
  if (io.spec().terminal) return std::nullopt;
  return Stdio{io.runtime_stdin(), io.runtime_stdout(), io.runtime_stderr()};
}

shim::Status read_pid_file(const std::string& path, std::uint32_t* pid) {
  std::string text;
  if (shim::Status s = shim::read_file(path, &text); !s.ok()) return s;
  long value = std::strtol(text.c_str(), nullptr, 10);
  if (value <= 0) return shim::unknown(fmt::format("invalid pid {:?} in {}", text, path));
  *pid = static_cast<std::uint32_t>(value);
  return {};
}

// The exec's OCI Process JSON with `terminal` forced to the request's value (Go does so).
std::string exec_spec(const task::ExecProcessRequest& request, shim::Status* status) {
  boost::system::error_code ec;
  boost::json::value spec = boost::json::parse(request.spec().value(), ec);
  if (ec || !spec.is_object()) {
    *status = shim::invalid_argument("exec spec is not an OCI process JSON object");
    return {};
  }
  spec.as_object()["terminal"] = request.terminal();
  return boost::json::serialize(spec);
}

}  // namespace

struct RuncService::CreateResult {
  shim::Status status;
  std::string rootfs;  // what we mounted
  std::uint32_t pid = 0;
  std::optional<CgroupPaths> cgroup;
};

RuncService::RuncService(shim::ServiceContext& context)
    : context_(context),
      events_(context.publisher,
              {.on_reaped = [this](const shim::ProcessRef& r, const shim::ProcessExit& e) { on_reaped(r, e); },
               .on_exit_published =
                   [this](const shim::ProcessRef& r, const shim::ProcessExit& e) { on_exit_published(r, e); }}),
      oom_(context.executor, context.logger, [this](const std::string& id) { events_.oom(id); }),
      exits_(context.reaper.subscribe([this](const shim::ProcessExit& exit) { events_.handle_exit(exit); })) {}

RuncService::~RuncService() = default;

shim::Status RuncService::find(const std::string& id, Container** container) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return shim::not_found("container not created");
  *container = it->second.get();
  return {};
}

shim::Status RuncService::find(const std::string& id, const std::string& exec_id,
                               Container** container, Process** process) {
  if (shim::Status s = find(id, container); !s.ok()) return s;
  *process = (*container)->process(exec_id);
  if (*process == nullptr) return shim::not_found(fmt::format("process does not exist {}", exec_id));
  return {};
}

// ---- Create ---------------------------------------------------------------------------

void RuncService::create(const CallInfo&, task::CreateTaskRequest request,
                         Reply<task::CreateTaskResponse> reply) {
  if (containers_.contains(request.id()) || creating_.contains(request.id())) {
    return reply.fail(shim::already_exists(fmt::format("container {}", request.id())));
  }
  DecodedOptions decoded;
  if (request.has_options() && !request.options().type_url().empty()) {
    if (shim::Status s = decode_runc_options(request.options(), &decoded); !s.ok()) return reply.fail(s);
    if (!decoded.note.empty()) context_.logger.warn("runtime options", {{"note", decoded.note}});
  }
  std::unique_ptr<ProcessIO> io;
  StdioSpec stdio{request.stdin(), request.stdout(), request.stderr(), request.terminal()};
  if (shim::Status s = ProcessIO::create(context_.executor, stdio, static_cast<int>(decoded.options.io_uid()),
                                         static_cast<int>(decoded.options.io_gid()), context_.logger, &io,
                                         {.binary_logger = binary_logger_settings(context_, request.id())});
      !s.ok()) {
    return reply.fail(s);
  }
  RuncConfig config{decoded.options.binary_name(), runc_root(decoded.options), context_.identity.namespace_,
                    request.bundle(), decoded.options.systemd_cgroup()};
  config.criu = decoded.options.criu_path();
  auto container = std::make_unique<Container>(request.id(), request.bundle(), decoded.options,
                                               RuncClient(context_.reaper, context_.spawner, config));
  container->init.id = request.id();
  container->init.stdio = stdio;
  auto hold = events_.hold_exits();
  std::optional<Stdio> stdio_fds = runtime_stdio(*io);
  auto start_logger = io->logger_starter();
  auto receive_console = io->console_receiver();
  std::string console_socket = io->console_socket_path();
  RuncClient runc = container->runc;
  creating_[request.id()] = PendingCreate{std::move(container), std::move(io), hold};

  // Everything blocking runs on the pool: files, mounts, runc create.
  auto work = [runc, request, options = decoded.options, stdio_fds, start_logger, receive_console,
               console_socket]() mutable {
    CreateResult result;
    auto fail = [&](shim::Status s) {
      result.status = std::move(s);
      return result;
    };
    if (auto s = write_options(request.bundle(), options); !s.ok()) return fail(s);
    if (auto s = write_runtime(request.bundle(), options.binary_name()); !s.ok()) return fail(s);
    if (request.rootfs_size() > 0) {
      if (auto s = make_rootfs_dir(request.bundle(), &result.rootfs); !s.ok()) return fail(s);
      if (auto s = mount_all(mount_entries(request.rootfs()), result.rootfs); !s.ok()) return fail(s);
    }
    // A binary:// logger is ready before runc runs (for a restore too, as in Go's Create).
    if (auto s = start_logger(); !s.ok()) {
      if (!result.rootfs.empty()) unmount_all(result.rootfs);
      return fail(s);
    }
    if (!request.checkpoint().empty()) return result;  // restored at Start: no runc create, no pid yet
    CreateArgs args{.console_socket = console_socket,
                    .no_pivot = options.no_pivot_root(),
                    .no_new_keyring = options.no_new_keyring()};
    result.status = runc.create(request.id(), args, stdio_fds);
    if (result.status.ok()) result.status = receive_console();  // runc sent it before returning
    if (result.status.ok()) {
      result.status = read_pid_file(runc.command_line().init_pid_file(), &result.pid);
    }
    if (result.status.ok()) {
      CgroupFs fs;
      CgroupPaths paths;
      // No cgroup is not fatal (Go logs it): Stats then answers NotFound.
      if (load_cgroup(fs, host_cgroup_version(fs.root), static_cast<int>(result.pid), &paths).ok()) {
        result.cgroup = std::move(paths);
      }
    }
    if (!result.status.ok() && !result.rootfs.empty()) unmount_all(result.rootfs);
    return result;
  };
  auto done = [this, request, reply](CreateResult result) mutable {
    finish_create(request, result, std::move(reply));
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::finish_create(const task::CreateTaskRequest& request, const CreateResult& result,
                                Reply<task::CreateTaskResponse> reply) {
  auto pending = creating_.extract(request.id());
  std::unique_ptr<Container> container = std::move(pending.mapped().container);
  std::unique_ptr<ProcessIO> io = std::move(pending.mapped().io);
  auto hold = pending.mapped().hold;
  bool restoring = !request.checkpoint().empty();  // runc restore at Start needs the pipes
  if (!restoring) io->close_runtime_ends();
  shim::Status status = result.status;
  if (status.ok() && !restoring) status = io->start();
  if (!status.ok()) {
    io->close();
    events_.release_hold(hold);
    return reply.fail(status);
  }
  std::string spec;
  if (shim::read_file(request.bundle() + "/config.json", &spec).ok()) {
    container->private_pid_namespace = has_private_pid_namespace(spec);
  }
  container->rootfs = result.rootfs;
  container->cgroup = result.cgroup;
  container->init.pid = result.pid;
  container->init.io = std::move(io);
  if (restoring) {
    container->restore = restore_args(request.bundle(), container->options, request.checkpoint(),
                                      request.parent_checkpoint());
  }
  std::string id = request.id();
  containers_[id] = std::move(container);

  containerd::events::TaskCreate event;
  event.set_container_id(id);
  event.set_bundle(request.bundle());
  *event.mutable_rootfs() = request.rootfs();
  event.mutable_io()->set_stdin(request.stdin());
  event.mutable_io()->set_stdout(request.stdout());
  event.mutable_io()->set_stderr(request.stderr());
  event.mutable_io()->set_terminal(request.terminal());
  event.set_checkpoint(request.checkpoint());
  event.set_pid(result.pid);
  events_.created(event);
  events_.release_hold(hold);

  task::CreateTaskResponse response;
  response.set_pid(result.pid);
  reply(response);
}

// ---- Start ----------------------------------------------------------------------------

void RuncService::start(const CallInfo&, task::StartRequest request, Reply<task::StartResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) return reply.fail(s);
  if (process->busy) return reply.fail(shim::unknown("cannot start a running process"));
  if (auto s = check_transition(process->state, Operation::kStart, process->is_init()); !s.ok()) {
    return reply.fail(s);
  }
  if (process->is_init()) return start_init(*container, std::move(reply));
  if (container->init.state == ProcessState::kStopped) {
    return reply.fail(shim::failed_precondition(
        fmt::format("container {} init process is not running", container->id)));
  }
  start_exec(*container, *process, std::move(reply));
}

void RuncService::start_init(Container& container, Reply<task::StartResponse> reply) {
  if (container.restore) return start_restored(container, std::move(reply));
  container.init.busy = true;
  auto token = events_.begin_start({container.id, ""});
  auto work = [runc = container.runc, id = container.id]() mutable { return runc.start(id); };
  auto done = [this, id = container.id, token, reply](shim::Status status) {
    Container* c = nullptr;
    if (!find(id, &c).ok()) {
      events_.start_failed(token);
      return reply.fail(shim::not_found("container not created"));
    }
    c->init.busy = false;
    if (!status.ok()) {
      events_.start_failed(token);
      return reply.fail(status);
    }
    c->init.state = ProcessState::kRunning;
    if (c->cgroup) {
      if (auto s = oom_.add(id, *c->cgroup); !s.ok()) {
        context_.logger.warn("add cg to OOM monitor", {{"id", id}, {"error", s.message()}});
      }
    }
    task::StartResponse response;
    response.set_pid(c->init.pid);
    events_.start_succeeded(token, c->init.pid);  // may report an early exit right away
    reply(response);
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::start_exec(Container& container, Process& process, Reply<task::StartResponse> reply) {
  std::unique_ptr<ProcessIO> io;
  if (auto s = ProcessIO::create(context_.executor, process.stdio, static_cast<int>(container.options.io_uid()),
                                 static_cast<int>(container.options.io_gid()), context_.logger, &io,
                                 {.binary_logger = binary_logger_settings(context_, process.exec_id)});
      !s.ok()) {
    return reply.fail(s);
  }
  process.busy = true;
  process.io = std::move(io);
  auto token = events_.begin_start({container.id, process.exec_id});
  struct ExecResult {
    shim::Status status;
    std::uint32_t pid = 0;
  };
  auto work = [runc = container.runc, id = container.id, exec_id = process.exec_id,
               spec = process.spec_json, stdio = runtime_stdio(*process.io),
               start_logger = process.io->logger_starter(), console = process.io->console_socket_path(),
               receive_console = process.io->console_receiver()]() mutable {
    ExecResult result;
    result.status = start_logger();  // a binary:// logger is ready before runc exec
    if (result.status.ok()) result.status = runc.exec(id, exec_id, spec, console, stdio);
    if (result.status.ok()) result.status = receive_console();
    if (result.status.ok()) {
      result.status = read_pid_file(runc.command_line().exec_pid_file(exec_id), &result.pid);
    }
    return result;
  };
  auto done = [this, id = container.id, exec_id = process.exec_id, token, reply](ExecResult result) {
    Container* c = nullptr;
    Process* p = nullptr;
    if (!find(id, exec_id, &c, &p).ok()) {
      events_.start_failed(token);
      return reply.fail(shim::not_found(fmt::format("process does not exist {}", exec_id)));
    }
    p->busy = false;
    p->io->close_runtime_ends();
    if (result.status.ok()) result.status = p->io->start();
    if (!result.status.ok()) {
      p->io->close();
      events_.start_failed(token);
      return reply.fail(result.status);
    }
    p->pid = result.pid;
    shim::ProcessHandle::open(static_cast<pid_t>(result.pid), &p->handle);  // before its exit is handled
    p->state = ProcessState::kRunning;
    task::StartResponse response;
    response.set_pid(result.pid);
    events_.start_succeeded(token, result.pid);
    reply(response);
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

// ---- Exec -----------------------------------------------------------------------------

void RuncService::exec(const CallInfo&, task::ExecProcessRequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (container->execs.contains(request.exec_id())) {
    return reply.fail(shim::already_exists(fmt::format("id {}", request.exec_id())));
  }
  if (auto s = check_transition(container->init.state, Operation::kExec, true); !s.ok()) {
    return reply.fail(s);
  }
  if (container->restore) return reply.fail(shim::unknown("cannot exec in a created state"));
  shim::Status status;
  std::string spec = exec_spec(request, &status);
  if (!status.ok()) return reply.fail(status);
  auto process = std::make_unique<Process>();
  process->id = request.exec_id();
  process->exec_id = request.exec_id();
  process->stdio = StdioSpec{request.stdin(), request.stdout(), request.stderr(), request.terminal()};
  process->spec_json = std::move(spec);
  container->execs.emplace(request.exec_id(), std::move(process));
  events_.exec_added(request.id(), request.exec_id());
  reply(Empty());
}

// ---- Delete ---------------------------------------------------------------------------

void RuncService::remove(const CallInfo&, task::DeleteRequest request, Reply<task::DeleteResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) return reply.fail(s);
  if (process->busy) return reply.fail(shim::unknown("cannot delete a running process"));
  if (auto s = check_transition(process->state, Operation::kDelete, process->is_init()); !s.ok()) {
    return reply.fail(s);
  }
  if (process->is_init()) return delete_init(*container, std::move(reply));
  delete_exec(*container, *process, std::move(reply));
}

namespace {

task::DeleteResponse delete_response(const Process& process) {
  task::DeleteResponse response;
  response.set_pid(process.pid);
  response.set_exit_status(process.exit ? static_cast<std::uint32_t>(process.exit->status) : 0);
  *response.mutable_exited_at() = exited_at(process.exit);
  return response;
}

// Waits (bounded) for the process's output to be copied out, then runs `next`.
void drain_then(ProcessIO* io, std::function<void()> next) {
  if (io == nullptr) return next();
  // Delivered, not just drained: ctr 1.6 drops FIFO bytes still unread when we answer.
  io->wait_delivered(kIoDrainTimeout, [next = std::move(next)](bool) { next(); });
}

// Runs `next` once a binary:// logger of `io` has exited (Go's Delete waits for it too),
// right away otherwise.
void after_logger_exit(std::unique_ptr<ProcessIO> io, std::function<void()> next) {
  if (io == nullptr) return next();
  io->after_logger_exit(std::move(next));
}

}  // namespace

void RuncService::delete_init(Container& container, Reply<task::DeleteResponse> reply) {
  container.init.busy = true;
  drain_then(container.init.io.get(), [this, id = container.id, reply]() {
    Container* c = nullptr;
    if (!find(id, &c).ok()) return reply.fail(shim::not_found("container not created"));
    auto work = [runc = c->runc, id, rootfs = c->rootfs]() mutable {
      shim::Status status = runc.remove(id, false);
      if (!rootfs.empty()) {
        if (auto s = unmount_all(rootfs); !s.ok() && status.ok()) {
          status = shim::unknown(fmt::format("failed rootfs umount: {}", s.message()));
        }
      }
      return status;
    };
    auto done = [this, id, reply](shim::Status status) {
      Container* c = nullptr;
      if (!find(id, &c).ok()) return reply.fail(shim::not_found("container not created"));
      c->init.busy = false;
      if (!status.ok()) return reply.fail(status);
      task::DeleteResponse response = delete_response(c->init);
      if (c->init.io) c->init.io->close();
      for (auto& [exec_id, exec] : c->execs) {
        if (exec->io) exec->io->close();
      }
      events_.forget({id, ""});
      oom_.remove(id);
      std::unique_ptr<ProcessIO> init_io = std::move(c->init.io);
      containers_.erase(id);
      containerd::events::TaskDelete event;
      event.set_container_id(id);
      event.set_pid(response.pid());
      event.set_exit_status(response.exit_status());
      *event.mutable_exited_at() = response.exited_at();
      after_logger_exit(std::move(init_io), [this, event, reply, response]() mutable {
        events_.deleted(event);
        reply(response);
      });
    };
    shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
  });
}

void RuncService::delete_exec(Container& container, Process& process, Reply<task::DeleteResponse> reply) {
  process.busy = true;
  drain_then(process.io.get(), [this, id = container.id, exec_id = process.exec_id, reply]() {
    Container* c = nullptr;
    Process* p = nullptr;
    if (!find(id, exec_id, &c, &p).ok()) {
      return reply.fail(shim::not_found(fmt::format("process does not exist {}", exec_id)));
    }
    task::DeleteResponse response = delete_response(*p);
    if (p->io) p->io->close();
    ::unlink(c->runc.command_line().exec_pid_file(exec_id).c_str());
    events_.forget({id, exec_id});
    std::unique_ptr<ProcessIO> io = std::move(p->io);
    c->execs.erase(exec_id);
    after_logger_exit(std::move(io), [reply, response]() mutable { reply(response); });
  });
}

// ---- Kill, State, Wait ----------------------------------------------------------------

void RuncService::kill(const CallInfo&, task::KillRequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) return reply.fail(s);
  int signal = static_cast<int>(request.signal());
  if (!process->is_init()) {
    if (auto s = check_transition(process->state, Operation::kKill, false); !s.ok()) return reply.fail(s);
    shim::Status s = process->handle.signal(signal);
    if (!s.ok()) return reply.fail(shim::not_found("process already finished"));
    return reply(Empty());
  }
  auto work = [runc = container->runc, id = container->id, signal, all = request.all()]() mutable {
    return runc.kill(id, signal, all);
  };
  auto done = [reply](shim::Status status) {
    if (!status.ok()) return reply.fail(status);
    reply(Empty());
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::state(const CallInfo&, task::StateRequest request, Reply<task::StateResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) return reply.fail(s);
  ProcessState state = process->state;
  // An exec shows its container's paused/pausing state, as in the Go shim.
  if (!process->is_init() && state == ProcessState::kRunning &&
      (container->init.state == ProcessState::kPaused || container->init.state == ProcessState::kPausing)) {
    state = container->init.state;
  }
  task::StateResponse response;
  response.set_id(process->id);
  response.set_bundle(container->bundle);
  response.set_pid(process->pid);
  response.set_status(state_status(state));
  response.set_stdin(process->stdio.stdin);
  response.set_stdout(process->stdio.stdout);
  response.set_stderr(process->stdio.stderr);
  response.set_terminal(process->stdio.terminal);
  response.set_exit_status(process->exit ? static_cast<std::uint32_t>(process->exit->status) : 0);
  *response.mutable_exited_at() = exited_at(process->exit);
  reply(response);
}

void RuncService::wait(const CallInfo&, task::WaitRequest request, Reply<task::WaitResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) return reply.fail(s);
  if (process->exit_published && process->exit) {
    task::WaitResponse response;
    response.set_exit_status(static_cast<std::uint32_t>(process->exit->status));
    *response.mutable_exited_at() = exited_at(process->exit);
    return reply(response);
  }
  process->waiters.push_back(std::move(reply));  // answered by on_exit_published
}

void RuncService::on_reaped(const shim::ProcessRef& ref, const shim::ProcessExit& exit) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (!find(ref.container_id, ref.exec_id, &container, &process).ok()) return;
  process->state = ProcessState::kStopped;
  process->exit = exit;
  process->handle.mark_reaped();
  if (process->io) process->io->process_exited();  // a console copy stops once drained
  if (ref.is_init()) oom_.check(ref.container_id);  // TaskOOM before this TaskExit
  if (!ref.is_init() || container->private_pid_namespace) return;
  // Without its own pid namespace nothing else dies with init: kill the rest, so the
  // execs' exits (which the init exit waits for) come.
  shim::post_and_reply(
      context_.pool, context_.executor, [runc = container->runc, id = container->id]() mutable {
        return runc.kill_all(id);
      },
      [this, id = container->id](shim::Status status) {
        if (!status.ok()) context_.logger.warn("failed to kill init's children", {{"id", id}, {"error", status.message()}});
      });
}

void RuncService::on_exit_published(const shim::ProcessRef& ref, const shim::ProcessExit& exit) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (!find(ref.container_id, ref.exec_id, &container, &process).ok()) return;
  process->exit_published = true;
  task::WaitResponse response;
  response.set_exit_status(static_cast<std::uint32_t>(exit.status));
  *response.mutable_exited_at() = exited_at(exit);
  for (auto& waiter : process->waiters) waiter(response);
  process->waiters.clear();
}

// ---- Pids, CloseIO, Pause, Resume, Update, Connect, Shutdown ---------------------------

void RuncService::pids(const CallInfo&, task::PidsRequest request, Reply<task::PidsResponse> reply) {
  Container* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  struct PsResult {
    shim::Status status;
    std::vector<int> pids;
  };
  auto work = [runc = container->runc, id = container->id]() mutable {
    PsResult result;
    result.status = runc.ps(id, &result.pids);
    return result;
  };
  auto done = [this, id = container->id, reply](PsResult result) {
    if (!result.status.ok()) return reply.fail(shim::unknown(result.status.message()));
    Container* c = nullptr;
    if (!find(id, &c).ok()) return reply.fail(shim::not_found("container not created"));
    task::PidsResponse response;
    for (int pid : result.pids) {
      auto* info = response.add_processes();
      info->set_pid(static_cast<std::uint32_t>(pid));
      for (const auto& [exec_id, exec] : c->execs) {
        if (exec->pid != static_cast<std::uint32_t>(pid)) continue;
        containerd::runc::v1::ProcessDetails details;
        details.set_exec_id(exec_id);
        info->mutable_info()->set_type_url("containerd.runc.v1.ProcessDetails");
        info->mutable_info()->set_value(details.SerializeAsString());
        break;
      }
    }
    reply(response);
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::stats(const CallInfo&, task::StatsRequest request, Reply<task::StatsResponse> reply) {
  Container* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  struct StatsResult {
    shim::Status status;
    task::StatsResponse response;
  };
  auto work = [cgroup = container->cgroup]() {
    StatsResult result;
    result.status = collect_metrics_any(CgroupFs{}, cgroup ? &*cgroup : nullptr,
                                        result.response.mutable_stats());
    return result;
  };
  auto done = [reply](StatsResult result) {
    if (!result.status.ok()) return reply.fail(result.status);
    reply(result.response);
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::close_io(const CallInfo&, task::CloseIORequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) return reply.fail(s);
  if (process->is_init() && process->io) process->io->close_stdin();
  if (!process->is_init() && process->io) process->io->close_stdin();
  reply(Empty());
}

void RuncService::pause(const CallInfo&, task::PauseRequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (auto s = check_transition(container->init.state, Operation::kPause, true); !s.ok()) return reply.fail(s);
  container->init.state = ProcessState::kPausing;
  auto work = [runc = container->runc, id = container->id]() mutable { return runc.pause(id); };
  auto done = [this, id = container->id, reply](shim::Status status) {
    Container* c = nullptr;
    if (!find(id, &c).ok()) return reply.fail(shim::not_found("container not created"));
    if (c->init.state == ProcessState::kPausing) {
      c->init.state = status.ok() ? ProcessState::kPaused : ProcessState::kRunning;
    }
    if (!status.ok()) return reply.fail(status);
    events_.paused(id);
    reply(Empty());
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::resume(const CallInfo&, task::ResumeRequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (auto s = check_transition(container->init.state, Operation::kResume, true); !s.ok()) return reply.fail(s);
  auto work = [runc = container->runc, id = container->id]() mutable { return runc.resume(id); };
  auto done = [this, id = container->id, reply](shim::Status status) {
    Container* c = nullptr;
    if (!find(id, &c).ok()) return reply.fail(shim::not_found("container not created"));
    if (!status.ok()) return reply.fail(status);
    if (c->init.state == ProcessState::kPaused) c->init.state = ProcessState::kRunning;
    events_.resumed(id);
    reply(Empty());
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::update(const CallInfo&, task::UpdateTaskRequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (auto s = check_transition(container->init.state, Operation::kUpdate, true); !s.ok()) return reply.fail(s);
  // Go unmarshals the resources before runc runs: malformed JSON fails with Go's text.
  if (auto s = go_json_syntax_check(request.resources().value()); !s.ok()) return reply.fail(s);
  auto work = [runc = container->runc, id = container->id, json = request.resources().value()]() mutable {
    return runc.update(id, json);
  };
  auto done = [reply](shim::Status status) {
    if (!status.ok()) return reply.fail(shim::unknown(status.message()));
    reply(Empty());
  };
  shim::post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuncService::connect(const CallInfo&, task::ConnectRequest request, Reply<task::ConnectResponse> reply) {
  task::ConnectResponse response;
  response.set_shim_pid(static_cast<std::uint32_t>(::getpid()));
  if (auto it = containers_.find(request.id()); it != containers_.end()) {
    response.set_task_pid(it->second->init.pid);
  }
  reply(response);
}

void RuncService::shutdown(const CallInfo&, task::ShutdownRequest, Reply<Empty> reply) {
  reply(Empty());  // goes out before the shutdown sequence closes the connection
  if (containers_.empty() && creating_.empty()) context_.shutdown.request_shutdown();
}

}  // namespace runc_shim
