// RuntimeTaskService: Exec (which only registers the process, as in Go), the Start of an
// exec, and Delete of execs and of containers.
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include "shim/linux/mount.h"
#include "shim/timestamp.h"
#include "task/runtime_task_service.h"

#include "shim/process/call_deadline.h"

namespace shim {

namespace {

// The JSON pointer of the first number in `value` beyond a double's range, or "" if none.
// Boost.JSON reads such a number as an infinity and writes it back as "Infinity", which
// is not JSON: runc would fail on it with a parse error about a file the user never saw.
std::string out_of_range_number(const boost::json::value& value, const std::string& at) {
  if (value.is_double()) return std::isfinite(value.get_double()) ? "" : (at.empty() ? "/" : at);
  if (const auto* object = value.if_object()) {
    for (const auto& [key, member] : *object) {
      std::string escaped;
      for (char c : key) escaped += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
      if (std::string found = out_of_range_number(member, at + "/" + escaped); !found.empty())
        return found;
    }
  } else if (const auto* array = value.if_array()) {
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (std::string found = out_of_range_number((*array)[i], fmt::format("{}/{}", at, i));
          !found.empty()) {
        return found;
      }
    }
  }
  return "";
}

}  // namespace

Status exec_spec(const task::ExecProcessRequest& request, std::string* spec_json) {
  boost::system::error_code ec;
  boost::json::value spec = boost::json::parse(request.spec().value(), ec);
  if (ec || !spec.is_object())
    return invalid_argument("exec spec is not an OCI process JSON object");
  if (std::string at = out_of_range_number(spec, ""); !at.empty()) {
    return invalid_argument(fmt::format("exec spec: the number at {} is out of range", at));
  }
  spec.as_object()["terminal"] = request.terminal();
  *spec_json = boost::json::serialize(spec);
  return {};
}

namespace {

constexpr auto kIoDrainTimeout = std::chrono::seconds(2);  // as the Go shim on Delete

task::DeleteResponse delete_response(const TaskProcess& process) {
  task::DeleteResponse response;
  response.set_pid(process.pid);
  response.set_exit_status(process.exit ? static_cast<std::uint32_t>(process.exit->status) : 0);
  *response.mutable_exited_at() = exited_at(process.exit);
  return response;
}

// Waits (bounded) until the process's output was copied out and read, then runs `next`.
void drain_then(ProcessIO* io, std::function<void()> next) {
  if (io == nullptr) return next();
  // Delivered, not just drained: ctr 1.6 drops FIFO bytes still unread when we answer.
  // `next` runs after the handler returned: it keeps the call's deadline.
  io->wait_delivered(kIoDrainTimeout,
                     [next = std::move(next), deadline = current_call_deadline()](bool) {
                       CallDeadlineScope scope(deadline);
                       next();
                     });
}

// Runs `next` once a binary:// logger of `io` has exited (Go's Delete waits for it too),
// right away otherwise.

struct ExecResult {
  Status status;
  std::uint32_t pid = 0;
  std::unique_ptr<ProcessIO> io;
};

}  // namespace

// ---- Exec -----------------------------------------------------------------------------

void RuntimeTaskService::exec(const CallInfo&, task::ExecProcessRequest request,
                              Reply<Empty> reply) {
  TaskContainer* container = nullptr;
  if (auto s = find(request.id(), &container); !s.ok()) return reply.fail(s);
  if (container->execs.contains(request.exec_id())) {
    return reply.fail(already_exists(fmt::format("id {}", request.exec_id())));
  }
  if (auto s = check_transition(container->init.state, Operation::kExec, true); !s.ok())
    return reply.fail(s);
  if (container->restore_pending) return reply.fail(unknown("cannot exec in a created state"));
  auto process = std::make_unique<TaskProcess>();
  if (auto s = exec_spec(request, &process->spec_json); !s.ok()) return reply.fail(s);
  process->id = request.exec_id();
  process->exec_id = request.exec_id();
  process->stdio =
      StdioSpec{request.stdin(), request.stdout(), request.stderr(), request.terminal()};
  container->execs.emplace(request.exec_id(), std::move(process));
  events_.exec_added(request.id(), request.exec_id());
  reply(Empty());
}

void RuntimeTaskService::start_exec(TaskContainer& container, TaskProcess& process,
                                    Reply<task::StartResponse> reply) {
  process.busy = true;
  auto token = events_.begin_start({container.id, process.exec_id});
  auto work = [this, holder = container.holder, exec_id = process.exec_id, spec = process.spec_json,
               stdio = process.stdio] {
    ExecResult result;
    result.status = make_process_io(context_, *holder, stdio, exec_id, &result.io);
    if (!result.status.ok()) return result;
    result.status = result.io->logger_starter()();  // a binary:// logger is ready first
    if (result.status.ok()) {
      result.status =
          holder->instance.exec(ExecConfig{exec_id, spec, runtime_stdio(*result.io)}, &result.pid);
    }
    if (result.status.ok()) result.status = result.io->console_receiver()();
    return result;
  };
  auto done = [this, id = container.id, exec_id = process.exec_id, token,
               reply](ExecResult result) {
    TaskContainer* c = nullptr;
    TaskProcess* p = nullptr;
    if (!find(id, exec_id, &c, &p).ok()) {
      if (result.io) result.io->close();
      events_.start_failed(token);
      return reply.fail(not_found(fmt::format("process does not exist {}", exec_id)));
    }
    p->busy = false;
    if (result.io) {
      result.io->close_runtime_ends();
      if (result.status.ok()) result.status = result.io->start();
    }
    if (!result.status.ok()) {
      if (result.io) result.io->close();
      p->io = std::move(result.io);
      events_.start_failed(token);
      return reply.fail(result.status);
    }
    p->io = std::move(result.io);
    p->pid = result.pid;
    // Before its exit is handled. No pidfd: it is gone already (Kill then says so).
    if (c->holder->host_pids())
      ProcessHandle::open(static_cast<pid_t>(result.pid), &p->handle).ignore_error();
    p->state = ProcessState::kRunning;
    task::StartResponse response;
    response.set_pid(result.pid);
    events_.start_succeeded(token, result.pid);
    reply(response);
  };
  post_and_reply(context_.pool, context_.executor, std::move(work), std::move(done));
}

// ---- Delete ---------------------------------------------------------------------------

void RuntimeTaskService::remove(const CallInfo&, task::DeleteRequest request,
                                Reply<task::DeleteResponse> reply) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  // Go's second Delete waits for the first on the process lock, then finds it deleted.
  if (process->deleting) return process->later_deletes.push_back(std::move(reply));
  if (process->busy) return reply.fail(unknown("cannot delete a running process"));
  if (auto s = check_transition(process->state, Operation::kDelete, process->is_init()); !s.ok()) {
    return reply.fail(s);
  }
  if (process->is_init()) return delete_init(*container, std::move(reply));
  delete_exec(*container, *process, std::move(reply));
}

// Runs `next` once the process's TaskExit went out, at most kIoDrainTimeout later: the
// exit waits for the output to be read (on_reaped), and a /tasks/delete must follow it.
void RuntimeTaskService::after_exit_published(TaskProcess& process, std::function<void()> next) {
  if (!process.exit || process.exit_published) return next();
  auto once = std::make_shared<std::function<void()>>(std::move(next));
  auto timer = std::make_shared<boost::asio::steady_timer>(context_.executor, kIoDrainTimeout);
  timer->async_wait([once, timer](const boost::system::error_code& ec) {
    if (auto run = std::exchange(*once, nullptr); run && !ec) run();
  });
  process.exit_published_waiters.push_back([once, timer] {
    timer->cancel();
    if (auto run = std::exchange(*once, nullptr)) run();
  });
}

// What Delete waits for: the TaskExit out, then the output delivered. `next` keeps the
// call's deadline.
void RuntimeTaskService::before_delete(const std::string& id, const std::string& exec_id,
                                       std::function<void()> next) {
  TaskContainer* container = nullptr;
  TaskProcess* process = nullptr;
  if (!find(id, exec_id, &container, &process).ok()) return next();
  after_exit_published(*process, [this, id, exec_id, next = std::move(next),
                                  deadline = current_call_deadline()]() mutable {
    CallDeadlineScope scope(deadline);
    TaskContainer* c = nullptr;
    TaskProcess* p = nullptr;
    if (!find(id, exec_id, &c, &p).ok()) return next();
    drain_then(p->io.get(), std::move(next));
  });
}

void RuntimeTaskService::delete_init(TaskContainer& container, Reply<task::DeleteResponse> reply) {
  container.init.busy = true;
  container.init.deleting = true;
  before_delete(container.id, "", [this, id = container.id, reply]() {
    TaskContainer* c = nullptr;
    if (!find(id, &c).ok()) return reply.fail(not_found("container not created"));
    // Its TaskExit still waits for running execs: Go's init is running until its exit is
    // handled after theirs. Going on would publish /tasks/delete with no TaskExit before.
    if (c->init.exit && !c->init.exit_published && c->has_live_exec()) {
      return finish_delete_init(id, unknown("cannot delete a running process"), reply);
    }
    auto work = [holder = c->holder] {
      Status status = holder->instance.remove();
      const std::string& rootfs = holder->config.rootfs;
      if (!rootfs.empty()) {
        if (auto s = unmount_all(rootfs); !s.ok() && status.ok()) {
          status = unknown(fmt::format("failed rootfs umount: {}", s.message()));
        }
      }
      return status;
    };
    serial(*c, std::move(work),
           [this, id, reply](Status status) { finish_delete_init(id, status, reply); });
  });
}

void RuntimeTaskService::finish_delete_init(const std::string& id, const Status& status,
                                            Reply<task::DeleteResponse> reply) {
  TaskContainer* c = nullptr;
  if (!find(id, &c).ok()) return reply.fail(not_found("container not created"));
  c->init.busy = false;
  c->init.deleting = false;
  auto later_deletes = std::exchange(c->init.later_deletes, {});
  if (!status.ok()) {
    reply.fail(status);
    // The process is still there: each waiting Delete tries again, in turn.
    for (auto& later : later_deletes) {
      task::DeleteRequest request;
      request.set_id(id);
      remove(CallInfo{}, std::move(request), std::move(later));
    }
    return;
  }
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
  after_logger_exit(std::move(init_io), [this, event, reply, response,
                                         later_deletes = std::move(later_deletes)]() mutable {
    events_.deleted(event);
    reply(response);
    for (auto& later : later_deletes) later.fail(not_found("cannot delete a deleted process"));
  });
}

void RuntimeTaskService::after_logger_exit(std::unique_ptr<ProcessIO> io,
                                           std::function<void()> next) {
  if (io == nullptr) return next();
  ++stopping_loggers_;
  io->after_logger_exit([this, next = std::move(next)] {
    --stopping_loggers_;
    next();
  });
}

void RuntimeTaskService::delete_exec(TaskContainer& container, TaskProcess& process,
                                     Reply<task::DeleteResponse> reply) {
  process.busy = true;
  before_delete(
      container.id, process.exec_id, [this, id = container.id, exec_id = process.exec_id, reply]() {
        TaskContainer* c = nullptr;
        TaskProcess* p = nullptr;
        if (!find(id, exec_id, &c, &p).ok()) {
          return reply.fail(not_found(fmt::format("process does not exist {}", exec_id)));
        }
        task::DeleteResponse response = delete_response(*p);
        if (p->io) p->io->close();
        // The runtime's own clean-up (runc: the exec's pid file) needs no answer first.
        context_.pool.post([&logger = context_.logger, holder = c->holder, id, exec_id] {
          if (Status s = holder->instance.delete_exec(exec_id); !s.ok()) {
            logger.warn("runtime's exec clean-up",
                        {{"id", id}, {"exec_id", exec_id}, {"error", s.message()}});
          }
        });
        events_.forget({id, exec_id});
        std::unique_ptr<ProcessIO> io = std::move(p->io);
        c->execs.erase(exec_id);
        after_logger_exit(std::move(io), [reply, response]() mutable { reply(response); });
      });
}

}  // namespace shim
