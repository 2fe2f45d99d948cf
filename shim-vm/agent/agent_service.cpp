#include "agent_service.h"

#include <sys/utsname.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <boost/json/parse.hpp>

#include "container_plan.h"
#include "guest_boot.h"
#include "shim/fs.h"

namespace shim_vm_agent {

namespace json = boost::json;
using shim::Code;
using shim::Status;

namespace {

constexpr std::uint32_t kProtocolVersion = 1;
constexpr const char* kService = "libshim.vm.agent.v1.Agent";

Status not_found(std::string_view what) { return Status(Code::kNotFound, std::string(what)); }

std::string kernel_release() {
  struct utsname name {};
  return ::uname(&name) == 0 ? name.release : "";
}

std::string cgroup_path_of(const std::string& id) { return "/containers/" + id; }

}  // namespace

AgentService::AgentService(boost::asio::any_io_executor executor, shim::Reaper& reaper,
                           shim::Spawner& spawner, shim::Logger logger,
                           DeferredModules& network_modules)
    : executor_(executor),
      spawner_(spawner),
      network_modules_(network_modules),
      oom_(executor, std::move(logger), [this](const std::string& id) { on_oom(id); }),
      exits_(reaper.subscribe([this](const shim::ProcessExit& exit) { on_exit(exit); })) {}

AgentService::~AgentService() = default;

void AgentService::register_on(shim::ttrpc::Router& router) {
  using shim::ttrpc::typed_handler;
  auto add = [&](const char* method, shim::ttrpc::Handler handler) {
    router.add(kService, method, std::move(handler));
  };
  add("Hello", typed_handler<pb::HelloRequest, pb::HelloResponse>(
                   [this](const auto&, auto request, auto reply) { hello(request, reply); }));
  add("CreateContainer",
      typed_handler<pb::CreateContainerRequest, pb::ProcessResponse>(
          [this](const auto&, auto request, auto reply) { create(std::move(request), reply); }));
  add("StartContainer",
      typed_handler<pb::ContainerRequest, pb::ProcessResponse>(
          [this](const auto&, auto request, auto reply) { start(request, reply); }));
  add("ExecProcess",
      typed_handler<pb::ExecProcessRequest, pb::ProcessResponse>(
          [this](const auto&, auto request, auto reply) { exec(std::move(request), reply); }));
  add("SignalProcess",
      typed_handler<pb::SignalProcessRequest, pb::Empty>(
          [this](const auto&, auto request, auto reply) { signal(request, reply); }));
  add("WaitProcess", typed_handler<pb::ProcessRequest, pb::WaitProcessResponse>(
                         [this](const auto&, auto request, auto reply) { wait(request, reply); }));
  add("DeleteProcess",
      typed_handler<pb::ProcessRequest, pb::Empty>(
          [this](const auto&, auto request, auto reply) { delete_process(request, reply); }));
  add("ReadOutput",
      typed_handler<pb::ReadOutputRequest, pb::ReadOutputResponse>(
          [this](const auto&, auto request, auto reply) { read_output(request, reply); }));
  add("WriteStdin", typed_handler<pb::WriteStdinRequest, pb::Empty>(
                        [this](const auto&, auto request, auto reply) {
                          write_stdin(std::move(request), reply);
                        }));
  add("CloseStdin",
      typed_handler<pb::ProcessRequest, pb::Empty>(
          [this](const auto&, auto request, auto reply) { close_stdin(request, reply); }));
  add("ResizeTerminal",
      typed_handler<pb::ResizeTerminalRequest, pb::Empty>(
          [this](const auto&, auto request, auto reply) { resize(request, reply); }));
  add("PauseContainer",
      typed_handler<pb::ContainerRequest, pb::Empty>(
          [this](const auto&, auto request, auto reply) { pause(request, reply, true); }));
  add("ResumeContainer",
      typed_handler<pb::ContainerRequest, pb::Empty>(
          [this](const auto&, auto request, auto reply) { pause(request, reply, false); }));
  add("ContainerPids",
      typed_handler<pb::ContainerRequest, pb::ContainerPidsResponse>(
          [this](const auto&, auto request, auto reply) { pids(request, reply); }));
  add("RemoveContainer",
      typed_handler<pb::ContainerRequest, pb::Empty>(
          [this](const auto&, auto request, auto reply) { remove(request, reply); }));
  add("ContainerStats",
      typed_handler<pb::ContainerRequest, pb::ContainerStatsResponse>(
          [this](const auto&, auto request, auto reply) { stats(request, reply); }));
  add("NextOom", typed_handler<pb::Empty, pb::OomEvent>(
                     [this](const auto&, auto, auto reply) { next_oom(reply); }));
  add("GuestStats", typed_handler<pb::Empty, pb::GuestStatsResponse>(
                        [this](const auto&, auto, auto reply) { guest_stats(reply); }));
  add("SetHostname",
      typed_handler<pb::SetHostnameRequest, pb::Empty>([](const auto&, auto request, auto reply) {
        Status s = set_guest_hostname(request.hostname());
        s.ok() ? reply(pb::Empty()) : reply.fail(s);
      }));
  add("SetupNetwork", typed_handler<pb::SetupNetworkRequest, pb::Empty>(
                          [this](const auto&, auto request, auto reply) {
                            Status s;  // no NIC, no driver: only lo goes up
                            if (request.interfaces_size() > 0) s = network_modules_.load();
                            if (s.ok()) s = set_up_guest_network(request);
                            s.ok() ? reply(pb::Empty()) : reply.fail(s);
                          }));
}

Status AgentService::find(const std::string& id, Container** container) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return not_found(fmt::format("container {} not found", id));
  *container = it->second.get();
  return {};
}

Status AgentService::find(const std::string& id, const std::string& exec_id, Container** container,
                          GuestProcess** process) {
  if (Status s = find(id, container); !s.ok()) return s;
  if (exec_id.empty()) {
    *process = (*container)->init.get();
    return {};
  }
  auto it = (*container)->execs.find(exec_id);
  if (it == (*container)->execs.end())
    return not_found(fmt::format("process {} of container {} not found", exec_id, id));
  *process = it->second.get();
  return {};
}

const GuestProcess* AgentService::sandbox_init(const json::object& spec,
                                               const std::string& id) const {
  const json::value* annotations = spec.if_contains("annotations");
  if (annotations == nullptr || !annotations->is_object()) return nullptr;
  const json::value* sandbox =
      annotations->get_object().if_contains("io.kubernetes.cri.sandbox-id");
  if (sandbox == nullptr || !sandbox->is_string() || sandbox->get_string() == id) return nullptr;
  auto it = containers_.find(std::string(sandbox->get_string()));
  if (it == containers_.end() || !it->second->init || it->second->init->exit() ||
      !it->second->init->handle().has_pidfd())
    return nullptr;
  return it->second->init.get();
}

void AgentService::hello(pb::HelloRequest, Reply<pb::HelloResponse> reply) {
  pb::HelloResponse response;
  response.set_version(kProtocolVersion);
  response.set_agent_version(LIBSHIM_VERSION);
  response.set_kernel_release(kernel_release());
  reply(response);
}

Status AgentService::spawn(shim::oci::ProcessSpawn& plan, ProcessPipes pipes,
                           GuestProcess& process) {
  shim::SpawnRequest& request = plan.request;
  if (pipes.pty.valid()) {
    request.fds = {{0, pipes.pty.slave()}, {1, pipes.pty.slave()}, {2, pipes.pty.slave()}};
    request.controlling_terminal = true;
  } else {
    request.fds.clear();
    if (pipes.child_stdin.valid()) request.fds.emplace_back(0, pipes.child_stdin.get());
    if (pipes.child_stdout.valid()) request.fds.emplace_back(1, pipes.child_stdout.get());
    if (pipes.child_stderr.valid()) request.fds.emplace_back(2, pipes.child_stderr.get());
  }
  shim::SpawnedProcess spawned;
  if (Status s = spawner_.spawn(request, &spawned); !s.ok()) return s;
  process.started(std::move(spawned), std::move(pipes));
  return {};
}

void AgentService::create(pb::CreateContainerRequest request, Reply<pb::ProcessResponse> reply) {
  if (containers_.contains(request.id()))
    return reply.fail(Status(Code::kAlreadyExists, fmt::format("container {}", request.id())));
  auto container = std::make_unique<Container>();
  container->id = request.id();
  container->rootfs = request.rootfs();
  boost::system::error_code ec;
  json::value spec = json::parse(request.spec_json(), ec);
  if (ec || !spec.is_object())
    return reply.fail(Status(Code::kInvalidArgument, "agent: the spec is not a JSON object"));
  container->spec = std::move(spec.as_object());

  // Its cgroup first, with the spec's resources where the guest's cgroup v2 takes them.
  json::object resources;
  if (const json::value* linux = container->spec.if_contains("linux");
      linux && linux->is_object()) {
    if (const json::value* r = linux->get_object().if_contains("resources"); r && r->is_object())
      resources = r->get_object();
  }
  auto cgroup = std::make_unique<shim::ContainerCgroup>();
  Status made =
      shim::ContainerCgroup::create(shim::CgroupFs{}, shim::CgroupVersion::kV2,
                                    cgroup_path_of(request.id()), resources, cgroup.get());
  if (!made.ok() && made.code() == Code::kUnimplemented) {
    made = shim::ContainerCgroup::create(shim::CgroupFs{}, shim::CgroupVersion::kV2,
                                         cgroup_path_of(request.id()), {}, cgroup.get());
  }
  if (!made.ok()) return reply.fail(made);
  container->cgroup = std::move(cgroup);

  const pb::Stdio& stdio = request.stdio();
  ProcessPipes pipes;
  Status status =
      make_pipes(stdio.stdin(), stdio.stdout(), stdio.stderr(), stdio.terminal(), &pipes);
  shim::oci::ProcessSpawn plan;
  ConsoleSize size;
  int pod_namespaces = 0;
  if (status.ok()) {
    status = plan_init(container->spec, container->rootfs, shim::ProcessStdio{}, &plan, &size,
                       &pod_namespaces);
  }
  // The pod's namespaces (CRI: its pause container's IPC, UTS, maybe pid) are those of the
  // sandbox container in this guest, if it runs here; else the VM's own.
  if (status.ok() && pod_namespaces != 0) {
    if (const GuestProcess* sandbox = sandbox_init(container->spec, request.id())) {
      plan.request.join_pidfd = sandbox->handle().pidfd();
      plan.request.join_namespaces = pod_namespaces;
    }
  }
  if (status.ok() && pipes.pty.valid() && size.rows > 0 && size.columns > 0)
    pipes.pty.resize(size.rows, size.columns).ignore_error();
  if (status.ok()) {
    plan.request.hold = true;
    plan.request.cgroup_procs = container->cgroup->procs_files();
    container->namespaces = plan.request.new_namespaces | plan.request.join_namespaces;
    container->init = std::make_unique<GuestProcess>(executor_, request.id(), "");
    status = spawn(plan, std::move(pipes), *container->init);
  }
  if (!status.ok()) {
    container->cgroup->remove().ignore_error();
    return reply.fail(status);
  }
  pb::ProcessResponse response;
  response.set_pid(static_cast<std::uint32_t>(container->init->pid()));
  oom_.add(request.id(), container->cgroup->paths()).ignore_error();  // logged by the watcher
  containers_[request.id()] = std::move(container);
  reply(response);
}

void AgentService::start(pb::ContainerRequest request, Reply<pb::ProcessResponse> reply) {
  Container* container = nullptr;
  if (Status s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (Status s = container->init->gate().release(); !s.ok()) return reply.fail(s);
  pb::ProcessResponse response;
  response.set_pid(static_cast<std::uint32_t>(container->init->pid()));
  reply(response);
}

void AgentService::exec(pb::ExecProcessRequest request, Reply<pb::ProcessResponse> reply) {
  Container* container = nullptr;
  if (Status s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  // An id whose process ended is free again, even if its DeleteProcess has not come yet
  // (the host answers Delete without waiting for it).
  if (auto it = container->execs.find(request.exec_id()); it != container->execs.end()) {
    if (!it->second->exit())
      return reply.fail(Status(Code::kAlreadyExists, fmt::format("exec {}", request.exec_id())));
    container->execs.erase(it);
  }
  if (container->init->exit()) {
    return reply.fail(Status(Code::kFailedPrecondition,
                             fmt::format("container {} is not running", request.id())));
  }
  // A new process would join the frozen cgroup and freeze there, with this loop waiting
  // for its exec: refused, as runc refuses an exec into a paused container.
  std::string frozen;
  if (shim::read_file(container->cgroup->paths().unified + "/cgroup.freeze", &frozen).ok() &&
      frozen.starts_with("1")) {
    return reply.fail(Status(Code::kFailedPrecondition,
                             fmt::format("cannot exec in a paused container {}", request.id())));
  }
  const pb::Stdio& stdio = request.stdio();
  ProcessPipes pipes;
  Status status =
      make_pipes(stdio.stdin(), stdio.stdout(), stdio.stderr(), stdio.terminal(), &pipes);
  shim::oci::ProcessSpawn plan;
  ConsoleSize size;
  if (status.ok()) {
    status = plan_exec(request.process_json(), container->rootfs, shim::ProcessStdio{},
                       container->init->handle().pidfd(), container->namespaces, &plan, &size);
  }
  if (status.ok() && pipes.pty.valid() && size.rows > 0 && size.columns > 0)
    pipes.pty.resize(size.rows, size.columns).ignore_error();
  auto process = std::make_unique<GuestProcess>(executor_, request.id(), request.exec_id());
  if (status.ok()) {
    plan.request.cgroup_procs = container->cgroup->procs_files();
    status = spawn(plan, std::move(pipes), *process);
  }
  if (!status.ok()) return reply.fail(status);
  pb::ProcessResponse response;
  response.set_pid(static_cast<std::uint32_t>(process->pid()));
  container->execs[request.exec_id()] = std::move(process);
  reply(response);
}

void AgentService::signal(pb::SignalProcessRequest request, Reply<pb::Empty> reply) {
  Container* container = nullptr;
  GuestProcess* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  int signal = static_cast<int>(request.signal());
  if (request.all() && request.exec_id().empty()) {
    // Every process of the container: its cgroup's members (a frozen cgroup gets the
    // signal once thawed, as with runc).
    std::string procs;
    if (shim::read_file(container->cgroup->paths().unified + "/cgroup.procs", &procs).ok()) {
      std::istringstream in(procs);
      for (pid_t pid = 0; in >> pid;) ::kill(pid, signal);
    }
    return reply(pb::Empty());
  }
  if (process->exit()) return reply.fail(not_found("process already finished"));
  if (Status s = process->handle().signal(signal); !s.ok()) return reply.fail(s);
  reply(pb::Empty());
}

void AgentService::wait(pb::ProcessRequest request, Reply<pb::WaitProcessResponse> reply) {
  Container* container = nullptr;
  GuestProcess* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  process->on_exit([reply](const shim::ProcessExit& exit) {
    pb::WaitProcessResponse response;
    response.set_pid(static_cast<std::uint32_t>(exit.pid));
    response.set_exit_status(exit.status);
    response.set_exited_at_unix_nano(
        std::chrono::duration_cast<std::chrono::nanoseconds>(exit.exited_at.time_since_epoch())
            .count());
    reply(response);
  });
}

void AgentService::delete_process(pb::ProcessRequest request, Reply<pb::Empty> reply) {
  Container* container = nullptr;
  if (Status s = find(request.id(), &container); !s.ok()) return reply(pb::Empty());
  auto it = container->execs.find(request.exec_id());
  if (request.exec_id().empty() || it == container->execs.end()) return reply(pb::Empty());
  if (!it->second->exit() && it->second->pid() > 0) {
    return reply.fail(Status(Code::kFailedPrecondition,
                             fmt::format("process {} is still running", request.exec_id())));
  }
  container->execs.erase(it);  // its streams close with it
  reply(pb::Empty());
}

void AgentService::pause(pb::ContainerRequest request, Reply<pb::Empty> reply, bool frozen) {
  Container* container = nullptr;
  if (Status s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  Status s = frozen ? container->cgroup->freeze() : container->cgroup->thaw();
  if (!s.ok()) return reply.fail(s);
  reply(pb::Empty());
}

void AgentService::pids(pb::ContainerRequest request, Reply<pb::ContainerPidsResponse> reply) {
  Container* container = nullptr;
  if (Status s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  std::string procs;
  if (Status s = shim::read_file(container->cgroup->paths().unified + "/cgroup.procs", &procs);
      !s.ok())
    return reply.fail(s);
  pb::ContainerPidsResponse response;
  std::istringstream in(procs);
  for (std::uint32_t pid = 0; in >> pid;) response.add_pids(pid);
  reply(response);
}

void AgentService::remove(pb::ContainerRequest request, Reply<pb::Empty> reply) {
  auto it = containers_.find(request.id());
  if (it == containers_.end()) return reply(pb::Empty());  // removed already
  Container& container = *it->second;
  oom_.remove(request.id());
  // Whatever is left dies with the cgroup (cgroup.kill, Linux 5.14).
  shim::write_file(container.cgroup->paths().unified + "/cgroup.kill", "1", 0644).ignore_error();
  Status removed = container.cgroup->remove();
  containers_.erase(it);
  if (!removed.ok()) return reply.fail(removed);
  reply(pb::Empty());
}

void AgentService::on_exit(const shim::ProcessExit& exit) {
  for (auto& [id, container] : containers_) {
    if (container->init && container->init->pid() == exit.pid && !container->init->exit()) {
      oom_.check(id);  // its OOM kill is answered before its exit
      container->init->exited(exit);
      return;
    }
    for (auto& [exec_id, process] : container->execs) {
      if (process->pid() == exit.pid && !process->exit()) {
        process->exited(exit);
        return;
      }
    }
  }
}

}  // namespace shim_vm_agent
