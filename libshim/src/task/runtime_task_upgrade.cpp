// RuntimeTaskService's part in a live upgrade (shim/live_upgrade.h, docs/live-upgrade.md):
// its containers cross the exec. Their processes stay the shim's children; the records
// (task/task_upgrade_records.h) and the runtime's Instance state (Instance::
// save_for_upgrade, Runtime::reopen) go into the upgrade state, and the new program
// makes again what only a running program holds: pidfds, OOM watchers. Wait calls
// in flight come back to it as requests (the server resends them) and are answered from
// the restored exits; an exit reaped after the exec reaches it because the reaper starts
// only after the restore.
//
// Stdio goes through ProcessIO's own save and restore: FIFO and file copies with their
// output buffers, and terminals, are carried; a binary:// logger refuses the upgrade with
// the reason (ProcessIO::upgrade_ready), not carried yet.
#include <fmt/format.h>

#include "common/vendor_call.h"
#include "task/runtime_task_service.h"
#include "task/task_upgrade_records.h"

namespace shim {

namespace json = boost::json;

namespace {

std::string process_name(const TaskContainer& container, const TaskProcess& process) {
  return process.is_init() ? fmt::format("container {}", container.id)
                           : fmt::format("exec {} of container {}", process.exec_id, container.id);
}

// Whether `process` can be saved now: Unavailable while a call or its exit is under way
// (asked again until the quiesce deadline); FailedPrecondition, which refuses the upgrade,
// for what is not carried yet (ProcessIO::upgrade_ready).
Status process_ready(const TaskContainer& container, const TaskProcess& process) {
  if (process.busy || process.deleting || !process.later_deletes.empty() ||
      !process.exit_published_waiters.empty() || process.state == ProcessState::kPausing ||
      (process.exit && !process.exit_published)) {
    return Status(Code::kUnavailable, fmt::format("{}: a call or its exit is under way",
                                                  process_name(container, process)));
  }
  if (process.io) {
    if (Status s = process.io->upgrade_ready(); !s.ok()) {
      return Status(s.code(), fmt::format("{}: {} (libshim {})", process_name(container, process),
                                          s.message(), LIBSHIM_VERSION));
    }
  }
  return {};
}

// Each process's stdio, keyed by exec id ("" for init).
Status save_stdio(const TaskContainer& container, json::object* stdio, std::vector<int>* fds) {
  std::vector<const TaskProcess*> processes{&container.init};
  for (const auto& [exec_id, exec] : container.execs) processes.push_back(exec.get());
  for (const TaskProcess* process : processes) {
    if (!process->io) continue;
    json::object io;
    if (Status s = process->io->save_for_upgrade(&io, fds); !s.ok()) {
      return Status(s.code(),
                    fmt::format("{}: stdio: {}", process_name(container, *process), s.message()));
    }
    (*stdio)[process->exec_id] = std::move(io);
  }
  return {};
}

}  // namespace

Status RuntimeTaskService::ready_for_upgrade() {
  if (!creating_.empty()) return Status(Code::kUnavailable, "a Create is under way");
  if (stopping_loggers_ > 0) {
    return Status(Code::kUnavailable, "a Delete waits for a binary:// logger to exit");
  }
  for (const auto& [id, container] : containers_) {
    if (container->restore_pending) {
      return Status(Code::kFailedPrecondition,
                    fmt::format("container {} waits for its restore from a checkpoint", id));
    }
    if (container->ops->busy()) {
      return Status(Code::kUnavailable,
                    fmt::format("container {}: a runtime call is under way", id));
    }
    if (Status s = process_ready(*container, container->init); !s.ok()) return s;
    for (const auto& [exec_id, exec] : container->execs) {
      if (Status s = process_ready(*container, *exec); !s.ok()) return s;
    }
  }
  if (!events_.settled())
    return Status(Code::kUnavailable, "an exit or a start is being published");
  return {};
}

Status RuntimeTaskService::save_for_upgrade(json::object* state, std::vector<int>* fds) {
  json::array containers;
  for (const auto& [id, container] : containers_) {
    json::object instance;
    Status saved = container->holder->instance.save_for_upgrade(&instance);
    if (saved.code() == Code::kUnimplemented) {
      return Status(Code::kFailedPrecondition,
                    fmt::format("container {}: its runtime cannot carry it across a live upgrade "
                                "(Instance::save_for_upgrade: {})",
                                id, saved.message()));
    }
    if (!saved.ok())
      return Status(saved.code(), fmt::format("container {}: {}", id, saved.message()));
    json::object stdio;
    if (Status s = save_stdio(*container, &stdio, fds); !s.ok()) return s;
    json::object record = save_container(*container, std::move(instance));
    record["stdio"] = std::move(stdio);
    containers.push_back(std::move(record));
  }
  (*state)["containers"] = std::move(containers);
  return {};
}

void RuntimeTaskService::upgrade_aborted() {
  for (const auto& [id, container] : containers_) {
    if (container->init.io) container->init.io->upgrade_aborted();
    for (const auto& [exec_id, exec] : container->execs) {
      if (exec->io) exec->io->upgrade_aborted();
    }
  }
}

Status RuntimeTaskService::restore_after_upgrade(const json::object& state) {
  const json::value* containers = state.if_contains("containers");
  if (containers == nullptr || !containers->is_array()) {
    return Status(Code::kFailedPrecondition, "upgrade state: tasks.containers is not an array");
  }
  for (const json::value& saved : containers->as_array()) {
    if (Status s = restore_container(saved); !s.ok()) return s;
  }
  return {};
}

Status RuntimeTaskService::restore_container(const json::value& saved) {
  auto container = std::make_unique<TaskContainer>();
  auto holder = std::make_shared<InstanceHolder>();
  json::object instance_state;
  if (Status s = load_container(saved, container.get(), &holder->config, &instance_state); !s.ok())
    return s;
  const std::string id = container->id;
  holder->pid_domain = next_pid_domain_++;
  holder->config.warm_cgroup_migration = [warmer = cgroup_warmer_]() mutable { warmer.warm(); };
  holder->config.events =
      std::make_shared<ReportedEvents>(context_.executor, reported_, holder->pid_domain, id);
  std::unique_ptr<Instance> instance;
  Status reopened = vendor_call(
      "Runtime::reopen",
      [&] { return runtime_->reopen(holder->config, instance_state, &instance); }, &context_.logger,
      id);
  if (reopened.ok() && instance == nullptr)
    reopened = Status(Code::kInternal, "Runtime::reopen made no instance");
  if (!reopened.ok()) {
    return Status(reopened.code(), fmt::format("container {}: {}", id, reopened.message()));
  }
  holder->instance = GuardedInstance(std::move(instance), context_.logger, id);
  if (Status s = holder->instance.exit_source(&holder->exit_source); !s.ok()) return s;
  if (!holder->host_pids()) events_.use_pid_domain(id, holder->pid_domain);
  container->holder = holder;

  std::vector<TaskProcess*> processes{&container->init};
  for (auto& [exec_id, exec] : container->execs) processes.push_back(exec.get());
  const json::value* saved_stdio =
      saved.is_object() ? saved.as_object().if_contains("stdio") : nullptr;
  const json::object* stdio = saved_stdio != nullptr ? saved_stdio->if_object() : nullptr;
  for (TaskProcess* process : processes) {
    Status made;
    if (stdio != nullptr) {
      // No entry: the process had no io when saved (an exec whose Start has not come).
      if (const json::value* io = stdio->if_contains(process->exec_id))
        made = restore_process_io(*holder, *process, *io);
    } else if (process->stdio.is_null() && !process->stdio.terminal) {
      // A state without stdio (libshim 0.3.0 before this wrote none): null IO opens nothing.
      made = make_process_io(context_, *holder, process->stdio, process->id, &process->io);
      if (made.ok()) made = process->io->start();
    } else {
      made = Status(Code::kFailedPrecondition, "no stdio state");
    }
    if (!made.ok()) {
      return Status(made.code(), fmt::format("{}: stdio: {}", process_name(*container, *process),
                                             made.message()));
    }
    // Not reaped yet (no exit recorded), so the pid is still this process's.
    if (process->pid != 0 && !process->exit && holder->host_pids()) {
      ProcessHandle::open(static_cast<pid_t>(process->pid), &process->handle).ignore_error();
    }
    events_.restore_process({id, process->exec_id}, process->pid, process->pid != 0,
                            process->exit.has_value());
  }
  watch_oom(*container);
  containers_[id] = std::move(container);
  context_.logger.info("container carried across a live upgrade", {{"id", id}});
  return {};
}

Status RuntimeTaskService::restore_process_io(const InstanceHolder& holder, TaskProcess& process,
                                              const json::value& saved) {
  ProcessIOOptions options;
  if (Status s = process_io_options(context_, holder, process.id, &options); !s.ok()) return s;
  return ProcessIO::restore(context_.executor, process.stdio, saved, context_.logger, &process.io,
                            options);
}

}  // namespace shim
