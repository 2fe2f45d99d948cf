// RuntimeTaskService: Create and the Start of a container's init (a restore, for a
// container created from a checkpoint).
//
// Create runs on the pool in Go's order (runc/container.go NewContainer): the runtime
// checks the options and writes its bundle files (Runtime::open), the rootfs is mounted,
// the stdio made (a binary:// logger started), then the init created; the console is
// received and the init's cgroup loaded. Exits of unknown pids are held meanwhile, since
// the init may die before its pid is known here.
#include <fmt/format.h>
#include <boost/json/parse.hpp>

#include "common/vendor_call.h"
#include "shim/fs.h"
#include "shim/linux/mount.h"
#include "shim/logger.h"
#include "stdio/output_annotations.h"
#include "task/runtime_task_service.h"

namespace shim {

struct RuntimeTaskService::CreateResult {
  Status status;
  std::shared_ptr<InstanceHolder> holder;
  std::unique_ptr<ProcessIO> io;
  std::uint32_t pid = 0;
  std::optional<CgroupPaths> cgroup;
};

namespace {

boost::json::object read_spec(const std::string& bundle) {
  std::string text;
  if (!read_file(bundle + "/config.json", &text).ok()) return {};
  boost::system::error_code ec;
  boost::json::value spec = boost::json::parse(text, ec);
  if (ec || !spec.is_object()) return {};
  return std::move(spec.as_object());
}

ContainerConfig container_config(const task::CreateTaskRequest& request) {
  ContainerConfig config;
  config.id = request.id();
  config.bundle = request.bundle();
  config.spec = read_spec(request.bundle());
  if (request.has_options()) config.options = request.options();
  config.checkpoint = request.checkpoint();
  config.parent_checkpoint = request.parent_checkpoint();
  config.terminal = request.terminal();
  return config;
}

// No cgroup is not fatal (Go logs it): Stats then answers NotFound, no OOM events.
std::optional<CgroupPaths> init_cgroup(std::uint32_t pid) {
  CgroupFs fs;
  CgroupPaths paths;
  if (!load_cgroup(fs, host_cgroup_version(fs.root), static_cast<int>(pid), &paths).ok())
    return std::nullopt;
  return paths;
}

}  // namespace

// Everything blocking of a Create, on a pool thread. The Instance reads config.rootfs
// (set before open(), mounted after it) through the config it was opened with.
RuntimeTaskService::CreateResult RuntimeTaskService::create_on_pool(
    const task::CreateTaskRequest& request, std::uint32_t pid_domain) {
  CreateResult result;
  auto holder = std::make_shared<InstanceHolder>();
  ContainerConfig& config = holder->config;
  config = container_config(request);
  config.warm_cgroup_migration = [warmer = cgroup_warmer_]() mutable { warmer.warm(); };
  holder->pid_domain = pid_domain;
  config.events =
      std::make_shared<ReportedEvents>(context_.executor, reported_, pid_domain, config.id);
  // Bad io.libshim.output.* annotations fail Create before anything is made.
  OutputBufferOptions output = context_.output_buffer;
  result.status = stdio::apply_output_annotations(config.spec, &output);
  if (!result.status.ok()) return result;
  if (request.rootfs_size() > 0) config.rootfs = rootfs_path(config.bundle);
  std::unique_ptr<Instance> instance;
  result.status = vendor_call(
      "Runtime::open", [&] { return runtime_->open(config, &instance); }, &context_.logger,
      config.id);
  if (result.status.ok() && instance == nullptr) {
    result.status = Status(Code::kInternal, "Runtime::open made no instance");
  }
  if (!result.status.ok()) return result;
  holder->instance = GuardedInstance(std::move(instance), context_.logger, config.id);
  result.status = holder->instance.exit_source(&holder->exit_source);
  if (!result.status.ok()) return result;
  result.holder = holder;
  bool mounted = false;
  if (!config.rootfs.empty()) {
    std::string dir;
    result.status = make_rootfs_dir(config.bundle, &dir);
    if (result.status.ok())
      result.status = mount_all(mount_entries(request.rootfs()), config.rootfs);
    if (!result.status.ok()) return result;
    mounted = true;
  }
  StdioSpec stdio{request.stdin(), request.stdout(), request.stderr(), request.terminal()};
  result.status = make_process_io(context_, *holder, stdio, request.id(), &result.io);
  // A binary:// logger is ready before the runtime runs (for a restore too, as in Go).
  if (result.status.ok()) result.status = result.io->logger_starter()();
  if (result.status.ok())
    result.status = holder->instance.create(runtime_stdio(*result.io), &result.pid);
  bool restoring = !config.checkpoint.empty();  // nothing ran: no console yet
  if (result.status.ok() && !restoring) result.status = result.io->console_receiver()();
  if (result.status.ok() && result.pid != 0 && holder->host_pids())
    result.cgroup = init_cgroup(result.pid);
  if (!result.status.ok() && mounted) {
    if (Status s = unmount_all(config.rootfs); !s.ok()) {
      context_.logger.warn("failed to cleanup rootfs mount",
                           {{"id", config.id}, {"error", s.message()}});
    }
  }
  return result;
}

ProcessStdio runtime_stdio(const ProcessIO& io) {
  ProcessStdio stdio;
  stdio.console_socket = io.console_socket_path();
  if (stdio.terminal()) return stdio;  // the process gets the pty, the runtime nothing
  stdio.stdin = io.runtime_stdin();
  stdio.stdout = io.runtime_stdout();
  stdio.stderr = io.runtime_stderr();
  return stdio;
}

Status process_io_options(ServiceContext& context, const InstanceHolder& holder,
                          const std::string& process_id, ProcessIOOptions* options) {
  OutputBufferOptions output = context.output_buffer;
  if (Status s = stdio::apply_output_annotations(holder.config.spec, &output); !s.ok()) return s;
  output.spill_dir = stdio::output_spill_dir(holder.config.bundle);
  *options = {.output_buffer = std::move(output),
              .binary_logger = binary_logger_settings(context, process_id)};
  return {};
}

Status make_process_io(ServiceContext& context, const InstanceHolder& holder,
                       const StdioSpec& stdio, const std::string& process_id,
                       std::unique_ptr<ProcessIO>* io) {
  StdioOwner owner;
  if (Status s = holder.instance.stdio_owner(&owner); !s.ok()) return s;
  ProcessIOOptions options;
  if (Status s = process_io_options(context, holder, process_id, &options); !s.ok()) return s;
  return ProcessIO::create(context.executor, stdio, owner.uid, owner.gid, context.logger, io,
                           options);
}

// ---- Create ---------------------------------------------------------------------------

void RuntimeTaskService::create(const CallInfo&, task::CreateTaskRequest request,
                                Reply<task::CreateTaskResponse> reply) {
  if (containers_.contains(request.id()) || creating_.contains(request.id())) {
    return reply.fail(already_exists(fmt::format("container {}", request.id())));
  }
  creating_[request.id()] = events_.hold_exits();

  auto work = [this, request, domain = next_pid_domain_++] {
    return create_on_pool(request, domain);
  };
  auto done = [this, request, reply](CreateResult result) mutable {
    finish_create(request, std::move(result), std::move(reply));
  };
  post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuntimeTaskService::finish_create(const task::CreateTaskRequest& request, CreateResult result,
                                       Reply<task::CreateTaskResponse> reply) {
  LifecycleEvents::StartToken hold = creating_.extract(request.id()).mapped();
  bool restoring = !request.checkpoint().empty();  // the restore at Start needs the pipes
  Status status = result.status;
  if (result.io && !restoring) {
    result.io->close_runtime_ends();
    if (status.ok()) status = result.io->start();
  }
  if (!status.ok()) {
    if (result.io) result.io->close();
    events_.release_hold(hold);
    return reply.fail(status);
  }
  auto container = std::make_unique<TaskContainer>();
  container->id = request.id();
  container->bundle = request.bundle();
  container->holder = result.holder;
  container->cgroup = std::move(result.cgroup);
  container->private_pid_namespace = has_private_pid_namespace(result.holder->config.spec);
  container->restore_pending = restoring;
  container->init.id = request.id();
  container->init.stdio =
      StdioSpec{request.stdin(), request.stdout(), request.stderr(), request.terminal()};
  container->init.pid = result.pid;
  container->init.io = std::move(result.io);
  // No pidfd: the init is gone already, and the handle stays invalid, which Kill reads so.
  if (!result.holder->host_pids()) events_.use_pid_domain(request.id(), result.holder->pid_domain);
  if (result.pid != 0 && result.holder->host_pids())
    ProcessHandle::open(static_cast<pid_t>(result.pid), &container->init.handle).ignore_error();
  // Watched from now: an OOM right after Start must not fall before the watch exists.
  watch_oom(*container);
  containers_[request.id()] = std::move(container);

  containerd::events::TaskCreate event;
  event.set_container_id(request.id());
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

void RuntimeTaskService::start(const CallInfo&, task::StartRequest request,
                               Reply<task::StartResponse> reply) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  if (process->busy) return reply.fail(unknown("cannot start a running process"));
  if (auto s = check_transition(process->state, Operation::kStart, process->is_init()); !s.ok()) {
    return reply.fail(s);
  }
  if (process->is_init()) return start_init(*container, std::move(reply));
  if (container->init.state == ProcessState::kStopped) {
    return reply.fail(failed_precondition(
        fmt::format("container {} init process is not running", container->id)));
  }
  start_exec(*container, *process, std::move(reply));
}

namespace {

struct StartResult {
  Status status;
  std::uint32_t pid = 0;
  std::optional<CgroupPaths> cgroup;  // loaded now when create() knew no pid
};

}  // namespace

void RuntimeTaskService::start_init(TaskContainer& container, Reply<task::StartResponse> reply) {
  container.init.busy = true;
  auto token = events_.begin_start({container.id, ""});
  bool restoring = container.restore_pending;
  // A restore sends the pty master through the socket Create made, as a create does.
  std::function<Status()> receive_console = [] { return Status(); };
  if (restoring && container.init.io) receive_console = container.init.io->console_receiver();
  auto work = [holder = container.holder, pid = container.init.pid,
               has_cgroup = container.cgroup.has_value(), receive_console] {
    StartResult result;
    result.pid = pid;
    result.status = holder->instance.start(&result.pid);
    if (result.status.ok()) result.status = receive_console();
    if (result.status.ok() && !has_cgroup && result.pid != 0 && holder->host_pids())
      result.cgroup = init_cgroup(result.pid);
    return result;
  };
  auto done = [this, id = container.id, token, restoring, reply](StartResult result) {
    TaskContainer* c = nullptr;
    if (!find(id, &c).ok()) {
      events_.start_failed(token);
      return reply.fail(not_found("container not created"));
    }
    c->init.busy = false;
    if (restoring && c->init.io) {
      c->init.io->close_runtime_ends();  // the runtime and the restored tree hold copies
      if (result.status.ok()) result.status = c->init.io->start();
    }
    if (!result.status.ok()) {
      // A failed restore stays "created checkpoint", as in Go: a later Start retries.
      events_.start_failed(token);
      return reply.fail(result.status);
    }
    c->restore_pending = false;
    if (result.pid != c->init.pid) {
      c->init.pid = result.pid;
      if (c->holder->host_pids())
        ProcessHandle::open(static_cast<pid_t>(result.pid), &c->init.handle)
            .ignore_error();  // as at Create
    }
    if (!c->cgroup) c->cgroup = std::move(result.cgroup);
    c->init.state = ProcessState::kRunning;
    watch_oom(*c);
    task::StartResponse response;
    response.set_pid(c->init.pid);
    events_.start_succeeded(token, c->init.pid);  // may report an early exit right away
    reply(response);
  };
  serial(container, std::move(work), std::move(done));
}

}  // namespace shim
