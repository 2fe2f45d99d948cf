#include "task/runtime_task_service.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/proto_wire.h"
#include "gocompat/go_json_syntax.h"
#include "shim/logger.h"
#include "shim/process/reaper.h"
#include "shim/timestamp.h"

namespace shim {
namespace {

// containerd.runc.v1.ProcessDetails (field 1: exec_id), the detail containerd's shims
// attach to an exec's entry in Pids. Encoded here so libshim needs no runc protos.
constexpr std::string_view kProcessDetailsType = "containerd.runc.v1.ProcessDetails";

std::string process_details(const std::string& exec_id) {
  std::string bytes(1, '\x0a');  // field 1, length-delimited
  detail::append_varint(bytes, exec_id.size());
  return bytes + exec_id;
}

// How long a TaskExit waits for the process's output to be copied out and read by the
// client (ProcessIO::wait_settled), and after how long without progress it stops waiting.
constexpr std::chrono::milliseconds kExitOutputTimeout{2000};
constexpr std::chrono::milliseconds kExitOutputStall{100};
// Output still held in the output buffer at the exit (containerd has just come back and
// drains a backlog) adds time at this pace, which any live reader beats (CRI takes ~13 MB/s
// on 2 cores): CRI stops reading a container's FIFOs once it learns of the exit
// (handleContainerExit), so what the buffer holds then would never reach the log. A reader
// that stops still ends the wait after kExitOutputBacklogStall.
constexpr std::uint64_t kBacklogBytesPerSecond = std::uint64_t{1} << 20;
// With a backlog the shim holds bytes it already took from the process: a reader that
// pauses longer than kExitOutputStall (ctr descheduled on a loaded machine) must not lose
// them, so the wait then gives up only after this long without progress. Seen: `ctr run`
// of 64 MiB of stderr on 2 busy cores lost its last 8 MB to a 100 ms pause of ctr.
constexpr std::chrono::milliseconds kExitOutputBacklogStall{1000};

std::uint64_t exit_backlog(const ProcessIO& io) {
  return io.buffered_bytes(StdioStream::kStdout) + io.buffered_bytes(StdioStream::kStderr);
}

std::chrono::milliseconds exit_output_timeout(const ProcessIO& io) {
  return kExitOutputTimeout +
         std::chrono::milliseconds(exit_backlog(io) * 1000 / kBacklogBytesPerSecond);
}

std::chrono::milliseconds exit_output_stall(const ProcessIO& io) {
  return exit_backlog(io) > 0 ? kExitOutputBacklogStall : kExitOutputStall;
}

task::WaitResponse wait_response(const ProcessExit& exit) {
  task::WaitResponse response;
  response.set_exit_status(static_cast<std::uint32_t>(exit.status));
  *response.mutable_exited_at() = to_timestamp(exit.exited_at);
  return response;
}

}  // namespace

RuntimeTaskService::RuntimeTaskService(ServiceContext& context, std::unique_ptr<Runtime> runtime)
    : context_(context),
      runtime_(std::move(runtime)),
      cgroup_warmer_(context.pool),
      events_(context.publisher,
              {.on_reaped = [this](const ProcessRef& r, const ProcessExit& e) { on_reaped(r, e); },
               .on_exit_published = [this](const ProcessRef& r,
                                           const ProcessExit& e) { on_exit_published(r, e); }}),
      oom_(context.executor, context.logger, [this](const std::string& id) { events_.oom(id); }),
      exits_(
          context.reaper.subscribe([this](const ProcessExit& exit) { events_.handle_exit(exit); })),
      reported_(std::make_shared<ReportedEventsSink>(ReportedEventsSink{
          .exited = [this](std::uint32_t domain,
                           const ProcessExit& exit) { events_.handle_exit(domain, exit); },
          .out_of_memory = [this](std::uint32_t domain,
                                  const std::string& id) { on_reported_oom(domain, id); }})) {
  context_.shutdown.set_keeper(std::string(kTasksKeeper), [this] { return why_kept(); });
}

RuntimeTaskService::~RuntimeTaskService() { context_.shutdown.remove_keeper(kTasksKeeper); }

// The containers keep the shim until their Delete finished (they leave containers_
// then), and so does every Create under way: a Shutdown sent after another container's
// Delete must not end a shim that is about to serve a new one.
std::string RuntimeTaskService::why_kept() const {
  if (containers_.empty() && creating_.empty()) return "";
  return fmt::format("{} container(s), {} create(s) under way", containers_.size(),
                     creating_.size());
}

Status RuntimeTaskService::find(const std::string& id, TaskContainer** container) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return not_found("container not created");
  *container = it->second.get();
  return {};
}

Status RuntimeTaskService::find(const std::string& id, const std::string& exec_id,
                                TaskContainer** container, TaskProcess** process) {
  if (Status s = find(id, container); !s.ok()) return s;
  *process = (*container)->process(exec_id);
  if (*process == nullptr) return not_found(fmt::format("process does not exist {}", exec_id));
  return {};
}

void RuntimeTaskService::watch_oom(const TaskContainer& container) {
  if (!container.cgroup || oom_.contains(container.id)) return;
  if (Status s = oom_.add(container.id, *container.cgroup); !s.ok()) {
    context_.logger.warn("add cg to OOM monitor", {{"id", container.id}, {"error", s.message()}});
  }
}

// ---- Exits ----------------------------------------------------------------------------

void RuntimeTaskService::on_reaped(const ProcessRef& ref, const ProcessExit& exit) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (!find(ref.container_id, ref.exec_id, &container, &process).ok()) return;
  process->state = ProcessState::kStopped;
  process->exit = exit;
  process->handle.mark_reaped();
  if (process->io) process->io->process_exited();  // a console copy stops once drained
  // TaskOOM before this TaskExit (a reported OOM was posted before the exit).
  if (ref.is_init() && container->holder->host_pids()) oom_.check(ref.container_id);
  const bool kill_rest = ref.is_init() && !container->private_pid_namespace;
  if (!kill_rest && !process->io) return;
  // The TaskExit waits for both: the rest of the container killed, the output read.
  LifecycleEvents::ExitToken token = events_.defer_exit();
  auto waiting = std::make_shared<int>(kill_rest && process->io ? 2 : 1);
  auto part_done = [this, token, waiting] {
    if (--*waiting == 0) events_.resume_exit(token);
  };
  if (process->io) {
    process->io->wait_settled(exit_output_timeout(*process->io), exit_output_stall(*process->io),
                              [part_done](bool) { part_done(); });
  }
  if (kill_rest) kill_rest_of(*container, part_done);
}

void RuntimeTaskService::on_reported_oom(std::uint32_t domain, const std::string& container_id) {
  TaskContainer* container = nullptr;
  if (!find(container_id, &container).ok() || container->holder->pid_domain != domain) return;
  events_.oom(container_id);
}

// Without its own pid namespace nothing else dies with init: kill the rest (the execs'
// exits, which the init's exit waits for, follow), before containerd hears of the exit,
// so its reaction (CRI deletes the task, killing "all" first) cannot race this kill.
void RuntimeTaskService::kill_rest_of(TaskContainer& container, std::function<void()> done) {
  serial(
      container, [holder = container.holder] { return holder->instance.kill(SIGKILL, true); },
      [this, done = std::move(done), id = container.id](Status status) {
        if (!status.ok() && status.code() != Code::kUnimplemented) {
          context_.logger.error("failed to kill init's children",
                                {{"id", id}, {"error", status.message()}});
        }
        done();
      });
}

void RuntimeTaskService::on_exit_published(const ProcessRef& ref, const ProcessExit& exit) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (!find(ref.container_id, ref.exec_id, &container, &process).ok()) return;
  process->exit_published = true;
  task::WaitResponse response = wait_response(exit);
  for (auto& waiter : process->waiters) waiter(response);
  process->waiters.clear();
  auto deletes = std::move(process->exit_published_waiters);
  process->exit_published_waiters.clear();
  for (auto& next : deletes) next();
}

// ---- State, Wait, Kill ----------------------------------------------------------------

void RuntimeTaskService::state(const CallInfo&, task::StateRequest request,
                               Reply<task::StateResponse> reply) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  ProcessState state = process->state;
  // An exec shows its container's paused/pausing state whatever its own (created,
  // running or stopped), as the Go shim's execProcess.Status does.
  ProcessState init_state = container->init.state;
  if (!process->is_init() &&
      (init_state == ProcessState::kPaused || init_state == ProcessState::kPausing)) {
    state = init_state;
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

void RuntimeTaskService::wait(const CallInfo&, task::WaitRequest request,
                              Reply<task::WaitResponse> reply) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  if (process->exit_published && process->exit) return reply(wait_response(*process->exit));
  process->waiters.push_back(std::move(reply));  // answered by on_exit_published
}

void RuntimeTaskService::kill(const CallInfo&, task::KillRequest request, Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  int signal = static_cast<int>(request.signal());
  if (!process->is_init()) {
    // Execs are signalled directly, as the Go shim does (no runtime call).
    if (auto s = check_transition(process->state, Operation::kKill, false); !s.ok())
      return reply.fail(s);
    if (!container->holder->host_pids()) {
      auto work = [holder = container->holder, exec_id = request.exec_id(), signal] {
        return holder->instance.kill_exec(exec_id, signal);
      };
      auto done = [reply](Status status) mutable {
        if (!status.ok()) return reply.fail(status);
        reply(Empty());
      };
      post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
      return;
    }
    if (!process->handle.signal(signal).ok())
      return reply.fail(not_found("process already finished"));
    return reply(Empty());
  }
  bool all = request.all();
  serial(
      *container,
      [holder = container->holder, signal, all] { return holder->instance.kill(signal, all); },
      [this, id = container->id, signal, all, reply](Status status) {
        TaskContainer* c = nullptr;
        if (status.code() == Code::kUnimplemented && find(id, &c).ok()) {
          // The runtime leaves signalling to us: the init through its pidfd; `all` only
          // when the init's pid namespace takes the rest with it.
          // No handle: its pidfd could not be opened, the process was already gone.
          status = all && !c->private_pid_namespace
                       ? failed_precondition("killing all processes needs the runtime's support")
                   : c->init.handle.valid() ? c->init.handle.signal(signal)
                                            : not_found("process already finished");
          if (!status.ok() && status.code() == Code::kNotFound)
            status = not_found("process already finished");
        }
        if (!status.ok()) return reply.fail(status);
        reply(Empty());
      });
}

// ---- Pids, Stats ----------------------------------------------------------------------

void RuntimeTaskService::pids(const CallInfo&, task::PidsRequest request,
                              Reply<task::PidsResponse> reply) {
  TaskContainer* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  struct PidsResult {
    Status status;
    std::vector<std::uint32_t> pids;
  };
  auto work = [holder = container->holder, cgroup = container->cgroup] {
    PidsResult result;
    result.status = holder->instance.pids(&result.pids);
    if (result.status.code() == Code::kUnimplemented) {
      result.pids.clear();
      result.status =
          cgroup ? read_cgroup_pids(*cgroup, &result.pids) : not_found("cgroup does not exist");
    }
    return result;
  };
  auto done = [this, id = container->id, reply](PidsResult result) {
    if (!result.status.ok()) return reply.fail(result.status);
    TaskContainer* c = nullptr;
    if (!find(id, &c).ok()) return reply.fail(not_found("container not created"));
    task::PidsResponse response;
    for (std::uint32_t pid : result.pids) {
      auto* info = response.add_processes();
      info->set_pid(pid);
      for (const auto& [exec_id, exec] : c->execs) {
        if (exec->pid != pid) continue;
        info->mutable_info()->set_type_url(std::string(kProcessDetailsType));
        info->mutable_info()->set_value(process_details(exec_id));
        break;
      }
    }
    reply(response);
  };
  post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

void RuntimeTaskService::stats(const CallInfo&, task::StatsRequest request,
                               Reply<task::StatsResponse> reply) {
  TaskContainer* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  struct StatsResult {
    Status status;
    task::StatsResponse response;
  };
  auto work = [holder = container->holder, cgroup = container->cgroup] {
    StatsResult result;
    result.status = holder->instance.stats(result.response.mutable_stats());
    if (result.status.code() == Code::kUnimplemented) {
      result.response.clear_stats();
      result.status = collect_metrics_any(CgroupFs{}, cgroup ? &*cgroup : nullptr,
                                          result.response.mutable_stats());
    }
    return result;
  };
  auto done = [reply](StatsResult result) {
    if (!result.status.ok()) return reply.fail(result.status);
    reply(result.response);
  };
  post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

// ---- CloseIO, ResizePty ---------------------------------------------------------------

void RuntimeTaskService::close_io(const CallInfo&, task::CloseIORequest request,
                                  Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  if (process->io) process->io->close_stdin();
  reply(Empty());
}

// Go: an unknown container or exec is the usual NotFound; a stopped exec refuses
// ("cannot resize a stopped container"); a process without a console, or an init whose
// console is gone, succeeds without effect.
void RuntimeTaskService::resize_pty(const CallInfo&, task::ResizePtyRequest request,
                                    Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  if (!process->is_init() && process->state == ProcessState::kStopped) {
    return reply.fail(unknown("cannot resize a stopped container"));
  }
  if (!process->io) return reply(Empty());
  if (auto s = process->io->resize(request.width(), request.height()); !s.ok())
    return reply.fail(s);
  if (container->holder->host_pids()) return reply(Empty());
  // The process's own terminal is the runtime's (a guest's pty): it resizes that too.
  auto work = [holder = container->holder, exec_id = request.exec_id(), width = request.width(),
               height = request.height()] {
    Status s = holder->instance.resize_terminal(exec_id, width, height);
    return s.code() == Code::kUnimplemented ? Status() : s;
  };
  auto done = [reply](Status status) {
    if (!status.ok()) return reply.fail(status);
    reply(Empty());
  };
  post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

// ---- Pause, Resume, Update, Checkpoint ------------------------------------------------

void RuntimeTaskService::pause(const CallInfo&, task::PauseRequest request, Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (auto s = check_transition(container->init.state, Operation::kPause, true); !s.ok())
    return reply.fail(s);
  container->init.state = ProcessState::kPausing;
  serial(
      *container, [holder = container->holder] { return holder->instance.pause(); },
      [this, id = container->id, reply](Status status) {
        TaskContainer* c = nullptr;
        if (!find(id, &c).ok()) return reply.fail(not_found("container not created"));
        if (c->init.state == ProcessState::kPausing) {
          c->init.state = status.ok() ? ProcessState::kPaused : ProcessState::kRunning;
        }
        if (!status.ok()) return reply.fail(status);
        events_.paused(id);
        reply(Empty());
      });
}

void RuntimeTaskService::resume(const CallInfo&, task::ResumeRequest request, Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (auto s = check_transition(container->init.state, Operation::kResume, true); !s.ok())
    return reply.fail(s);
  serial(
      *container, [holder = container->holder] { return holder->instance.resume(); },
      [this, id = container->id, reply](Status status) {
        TaskContainer* c = nullptr;
        if (!find(id, &c).ok()) return reply.fail(not_found("container not created"));
        if (!status.ok()) return reply.fail(status);
        if (c->init.state == ProcessState::kPaused) c->init.state = ProcessState::kRunning;
        events_.resumed(id);
        reply(Empty());
      });
}

void RuntimeTaskService::update(const CallInfo&, task::UpdateTaskRequest request,
                                Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (auto s = check_transition(container->init.state, Operation::kUpdate, true); !s.ok())
    return reply.fail(s);
  // Go unmarshals the LinuxResources before the runtime runs: malformed JSON fails with
  // encoding/json's text (pkg/process Init.Update).
  if (auto s = go_json_syntax_check(request.resources().value()); !s.ok()) return reply.fail(s);
  serial(
      *container,
      [holder = container->holder, json = request.resources().value()] {
        return holder->instance.update(json);
      },
      [reply](Status status) {
        if (!status.ok()) return reply.fail(status);
        reply(Empty());
      });
}

void RuntimeTaskService::checkpoint(const CallInfo&, task::CheckpointTaskRequest request,
                                    Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (auto s = check_transition(container->init.state, Operation::kCheckpoint, true); !s.ok()) {
    return reply.fail(s);
  }
  CheckpointConfig config{request.path(), std::nullopt};
  if (request.has_options()) config.options = request.options();
  serial(
      *container,
      [holder = container->holder, config] { return holder->instance.checkpoint(config); },
      [reply](Status status) {
        if (!status.ok()) return reply.fail(status);
        reply(Empty());
      });
}

// ---- Connect, Shutdown ----------------------------------------------------------------

void RuntimeTaskService::connect(const CallInfo&, task::ConnectRequest request,
                                 Reply<task::ConnectResponse> reply) {
  task::ConnectResponse response;
  response.set_shim_pid(static_cast<std::uint32_t>(::getpid()));
  if (auto it = containers_.find(request.id()); it != containers_.end()) {
    response.set_task_pid(it->second->init.pid);
  }
  reply(response);
}

// containerd sends Shutdown after every task delete (shim/shutdown_control.h): the shim
// ends only when no keeper (these containers, a sandbox service's) keeps it.
// The rule is applied before the reply: what it logs reaches containerd, which stops
// reading the shim's log FIFO of that task once answered. The reply still goes out before
// the shutdown sequence closes the connection (that sequence is posted).
void RuntimeTaskService::shutdown(const CallInfo&, task::ShutdownRequest, Reply<Empty> reply) {
  std::string kept = context_.shutdown.shutdown_if_unused();
  if (!kept.empty()) context_.logger.debug("shutdown: shim kept", {{"by", kept}});
  reply(Empty());
}

}  // namespace shim
