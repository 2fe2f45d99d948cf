#include "example_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "shim/fs.h"
#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/timestamp.h"

namespace example {
namespace {

using shim::Status;

std::vector<std::string> strings_of(const boost::json::value* array) {
  std::vector<std::string> out;
  if (array == nullptr || !array->is_array()) return out;
  for (const auto& item : array->as_array()) {
    if (item.is_string()) out.emplace_back(item.as_string());
  }
  return out;
}

// Reads args and env of an OCI `process` object.
Status parse_process(const boost::json::value& process, Process* out) {
  if (!process.is_object()) return shim::invalid_argument("OCI process is not an object");
  out->args = strings_of(process.as_object().if_contains("args"));
  out->env = strings_of(process.as_object().if_contains("env"));
  if (out->args.empty()) return shim::invalid_argument("OCI process has no args");
  return {};
}

// The child's stdout/stderr. For a FIFO the shim first opens a read end and holds it
// while the process exists (see FifoReaders): the write-only open then returns at once,
// and the child's writes never meet a FIFO without a reader.
int open_output(const std::string& path, FifoReaders& readers) {
  int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (reader >= 0) readers.hold(reader);
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // child blocks
  return fd;
}

int open_input(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

containerd::v1::types::Status status_of(ProcessState state) {
  switch (state) {
    case ProcessState::kCreated: return containerd::v1::types::CREATED;
    case ProcessState::kRunning: return containerd::v1::types::RUNNING;
    case ProcessState::kStopped: return containerd::v1::types::STOPPED;
  }
  return containerd::v1::types::UNKNOWN;
}

}  // namespace

ExampleService::ExampleService(shim::ServiceContext& context)
    : context_(context),
      events_(context.publisher,
              {.on_reaped =
                   [this](const shim::ProcessRef& ref, const shim::ProcessExit& exit) {
                     Container* c = nullptr;
                     Process* p = nullptr;
                     if (!find(ref.container_id, ref.exec_id, &c, &p).ok()) return;
                     p->state = ProcessState::kStopped;
                     p->exit = exit;
                     p->handle.mark_reaped();
                   },
               .on_exit_published =
                   [this](const shim::ProcessRef& ref, const shim::ProcessExit& exit) {
                     on_exit_published(ref, exit);
                   }}),
      exits_(context.reaper.subscribe(
          [this](const shim::ProcessExit& exit) { events_.handle_exit(exit); })) {}

Status ExampleService::find(const std::string& id, const std::string& exec_id,
                            Container** container, Process** process) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return shim::not_found("container not created");
  *container = it->second.get();
  if (exec_id.empty()) {
    *process = &it->second->init;
    return {};
  }
  auto exec = it->second->execs.find(exec_id);
  if (exec == it->second->execs.end()) return shim::not_found(fmt::format("process {}", exec_id));
  *process = &exec->second;
  return {};
}

void ExampleService::create(const shim::CallInfo&, task::CreateTaskRequest request,
                            shim::Reply<task::CreateTaskResponse> reply) {
  if (containers_.contains(request.id())) {
    return reply.fail(shim::already_exists(fmt::format("container {}", request.id())));
  }
  if (request.rootfs_size() != 0) {
    return reply.fail(shim::invalid_argument("the example runtime takes a ready rootfs (ctr run --rootfs)"));
  }
  std::string spec_text;
  if (Status s = shim::read_file(request.bundle() + "/config.json", &spec_text); !s.ok()) {
    return reply.fail(s);
  }
  boost::system::error_code ec;
  boost::json::value spec = boost::json::parse(spec_text, ec);
  if (ec || !spec.is_object() || !spec.as_object().contains("process")) {
    return reply.fail(shim::invalid_argument(fmt::format("{}/config.json is not an OCI spec", request.bundle())));
  }
  auto container = std::make_unique<Container>();
  container->id = request.id();
  container->bundle = request.bundle();
  const auto* root = spec.as_object().if_contains("root");
  std::string root_path = "rootfs";
  if (root && root->is_object() && root->as_object().contains("path")) {
    root_path = boost::json::value_to<std::string>(root->as_object().at("path"));
  }
  container->rootfs = root_path.starts_with('/') ? root_path : request.bundle() + "/" + root_path;
  container->init.id = request.id();
  if (Status s = parse_process(spec.as_object().at("process"), &container->init); !s.ok()) {
    return reply.fail(s);
  }
  container->init.stdin_path = request.stdin();
  container->init.stdout_path = request.stdout();
  container->init.stderr_path = request.stderr();

  containerd::events::TaskCreate event;
  event.set_container_id(request.id());
  event.set_bundle(request.bundle());
  event.mutable_io()->set_stdin(request.stdin());
  event.mutable_io()->set_stdout(request.stdout());
  event.mutable_io()->set_stderr(request.stderr());
  containers_[request.id()] = std::move(container);
  events_.created(event);  // no pid until Start: the process does not exist yet

  task::CreateTaskResponse response;
  reply(response);
}

Status ExampleService::spawn(Container& container, Process& process) {
  shim::SpawnRequest request;
  request.path = "/usr/sbin/chroot";  // chroot(1) execs the process inside the rootfs
  request.argv = {"chroot", container.rootfs};
  request.argv.insert(request.argv.end(), process.args.begin(), process.args.end());
  request.env = process.env;
  int in = process.stdin_path.empty() ? -1 : open_input(process.stdin_path);
  auto output = [&process](const std::string& path) {
    return path.empty() ? -1 : open_output(path, process.output_readers);
  };
  int out = output(process.stdout_path);
  int err = output(process.stderr_path);
  if (in >= 0) request.fds.emplace_back(0, in);
  if (out >= 0) request.fds.emplace_back(1, out);
  if (err >= 0) request.fds.emplace_back(2, err);

  shim::SpawnedProcess child;
  Status status = context_.spawner.spawn(request, &child);
  for (int fd : {in, out, err}) {
    if (fd >= 0) ::close(fd);  // the child has its copies; EOF reaches ctr when it exits
  }
  if (!status.ok()) {
    process.output_readers.close_all();
    return status;
  }
  process.pid = static_cast<std::uint32_t>(child.pid);
  process.handle = std::move(child.handle);
  process.state = ProcessState::kRunning;
  return {};
}

void ExampleService::start(const shim::CallInfo&, task::StartRequest request,
                           shim::Reply<task::StartResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) {
    return reply.fail(s);
  }
  if (process->state != ProcessState::kCreated) {
    return reply.fail(shim::failed_precondition(fmt::format("process {} already started", process->id)));
  }
  auto token = events_.begin_start({request.id(), request.exec_id()});
  if (Status s = spawn(*container, *process); !s.ok()) {
    events_.start_failed(token);
    return reply.fail(shim::unknown(fmt::format("start {}: {}", process->id, s.message())));
  }
  if (request.exec_id().empty()) {
    shim::write_file_atomic(container->bundle + "/init.pid", std::to_string(process->pid));
  }
  task::StartResponse response;
  response.set_pid(process->pid);
  events_.start_succeeded(token, process->pid);
  reply(response);
}

void ExampleService::exec(const shim::CallInfo&, task::ExecProcessRequest request,
                          shim::Reply<shim::Empty> reply) {
  auto it = containers_.find(request.id());
  if (it == containers_.end()) return reply.fail(shim::not_found("container not created"));
  Container& container = *it->second;
  if (container.execs.contains(request.exec_id())) {
    return reply.fail(shim::already_exists(fmt::format("id {}", request.exec_id())));
  }
  if (container.init.state != ProcessState::kRunning) {
    return reply.fail(shim::failed_precondition(fmt::format("container {} is not running", request.id())));
  }
  boost::system::error_code ec;
  boost::json::value spec = boost::json::parse(request.spec().value(), ec);
  Process process;
  if (ec) return reply.fail(shim::invalid_argument("exec spec is not JSON"));
  if (Status s = parse_process(spec, &process); !s.ok()) return reply.fail(s);
  process.id = request.exec_id();
  process.stdin_path = request.stdin();
  process.stdout_path = request.stdout();
  process.stderr_path = request.stderr();
  container.execs.emplace(request.exec_id(), std::move(process));
  events_.exec_added(request.id(), request.exec_id());
  reply(shim::Empty());
}

void ExampleService::state(const shim::CallInfo&, task::StateRequest request,
                           shim::Reply<task::StateResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) {
    return reply.fail(s);
  }
  task::StateResponse response;
  response.set_id(process->id);
  response.set_bundle(container->bundle);
  response.set_pid(process->pid);
  response.set_status(status_of(process->state));
  response.set_stdin(process->stdin_path);
  response.set_stdout(process->stdout_path);
  response.set_stderr(process->stderr_path);
  response.set_exit_status(process->exit ? static_cast<std::uint32_t>(process->exit->status) : 0);
  *response.mutable_exited_at() = shim::exited_at(process->exit);
  reply(response);
}

void ExampleService::wait(const shim::CallInfo&, task::WaitRequest request,
                          shim::Reply<task::WaitResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) {
    return reply.fail(s);
  }
  process->waiters.push_back(std::move(reply));  // answered in on_exit_published
  if (process->exit && process->state == ProcessState::kStopped) {
    on_exit_published({request.id(), request.exec_id()}, *process->exit);
  }
}

void ExampleService::on_exit_published(const shim::ProcessRef& ref, const shim::ProcessExit& exit) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (!find(ref.container_id, ref.exec_id, &container, &process).ok()) return;
  task::WaitResponse response;
  response.set_exit_status(static_cast<std::uint32_t>(exit.status));
  *response.mutable_exited_at() = shim::exited_at(exit);
  for (auto& waiter : process->waiters) waiter(response);
  process->waiters.clear();
}

void ExampleService::kill(const shim::CallInfo&, task::KillRequest request,
                          shim::Reply<shim::Empty> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) {
    return reply.fail(s);
  }
  if (process->state == ProcessState::kCreated) {
    return reply.fail(shim::failed_precondition("process not created"));
  }
  if (process->state == ProcessState::kStopped) {
    return reply.fail(shim::not_found("process already finished"));
  }
  int signal = static_cast<int>(request.signal());
  if (Status s = process->handle.signal(signal); !s.ok()) return reply.fail(s);
  if (request.all() && request.exec_id().empty()) {
    for (auto& [id, exec] : container->execs) {
      if (exec.state == ProcessState::kRunning) exec.handle.signal(signal);
    }
  }
  reply(shim::Empty());
}

void ExampleService::remove(const shim::CallInfo&, task::DeleteRequest request,
                            shim::Reply<task::DeleteResponse> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) {
    return reply.fail(s);
  }
  if (process->state == ProcessState::kRunning) {
    return reply.fail(shim::unknown("cannot delete a running process"));
  }
  task::DeleteResponse response;
  response.set_pid(process->pid);
  response.set_exit_status(process->exit ? static_cast<std::uint32_t>(process->exit->status) : 0);
  *response.mutable_exited_at() = shim::exited_at(process->exit);
  if (!request.exec_id().empty()) {
    events_.forget({request.id(), request.exec_id()});
    container->execs.erase(request.exec_id());
    return reply(response);
  }
  containerd::events::TaskDelete event;
  event.set_container_id(request.id());
  event.set_pid(response.pid());
  event.set_exit_status(response.exit_status());
  *event.mutable_exited_at() = response.exited_at();
  events_.forget({request.id(), ""});
  containers_.erase(request.id());
  events_.deleted(event);
  reply(response);
}

void ExampleService::pids(const shim::CallInfo&, task::PidsRequest request,
                          shim::Reply<task::PidsResponse> reply) {
  auto it = containers_.find(request.id());
  if (it == containers_.end()) return reply.fail(shim::not_found("container not created"));
  task::PidsResponse response;
  auto add = [&](const Process& p) {
    if (p.state == ProcessState::kRunning) response.add_processes()->set_pid(p.pid);
  };
  add(it->second->init);
  for (const auto& [id, exec] : it->second->execs) add(exec);
  reply(response);
}

void ExampleService::connect(const shim::CallInfo&, task::ConnectRequest request,
                             shim::Reply<task::ConnectResponse> reply) {
  task::ConnectResponse response;
  response.set_shim_pid(static_cast<std::uint32_t>(::getpid()));
  if (auto it = containers_.find(request.id()); it != containers_.end()) {
    response.set_task_pid(it->second->init.pid);
  }
  reply(response);
}

void ExampleService::shutdown(const shim::CallInfo&, task::ShutdownRequest,
                              shim::Reply<shim::Empty> reply) {
  reply(shim::Empty());  // queued before the shutdown begins, so it is sent first
  if (containers_.empty()) context_.shutdown.request_shutdown();
}

}  // namespace example
