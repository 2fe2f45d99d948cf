#include "shim/events/lifecycle_events.h"

#include <chrono>

#include "shim/timestamp.h"

namespace shim {

LifecycleEvents::LifecycleEvents(Publisher& publisher, Hooks hooks)
    : publisher_(publisher), hooks_(std::move(hooks)) {}

void LifecycleEvents::publish(std::string_view topic, const google::protobuf::MessageLite& event) {
  publisher_.publish(topic, event);
}

LifecycleEvents::StartToken LifecycleEvents::hold_exits() {
  StartToken token = next_token_++;
  holds_.insert(token);
  return token;
}

void LifecycleEvents::release_hold(StartToken token) {
  holds_.erase(token);
  drop_unclaimed_if_idle();
}

void LifecycleEvents::created(const containerd::events::TaskCreate& event) {
  ContainerState& container = containers_[event.container_id()];
  container.init_pid = event.pid();
  publish("/tasks/create", event);
  if (event.pid() == 0) return;
  ProcessRef ref{event.container_id(), ""};
  PidKey key = key_of(ref.container_id, event.pid());
  track(key, ref);
  if (auto early = take_unclaimed(key)) reaped(key, by_pid_[key], *early);
}

void LifecycleEvents::use_pid_domain(const std::string& container_id, std::uint32_t domain) {
  containers_[container_id].domain = domain;
}

LifecycleEvents::PidKey LifecycleEvents::key_of(const std::string& container_id,
                                                std::uint32_t pid) const {
  auto it = containers_.find(container_id);
  return PidKey{it == containers_.end() ? kHostPids : it->second.domain, pid};
}

std::optional<ProcessExit> LifecycleEvents::take_unclaimed(const PidKey& key) {
  auto it = unclaimed_.find(key);
  if (it == unclaimed_.end()) return std::nullopt;
  ProcessExit exit = it->second;
  unclaimed_.erase(it);
  return exit;
}

void LifecycleEvents::exec_added(const std::string& container_id, const std::string& exec_id) {
  containerd::events::TaskExecAdded event;
  event.set_container_id(container_id);
  event.set_exec_id(exec_id);
  publish("/tasks/exec-added", event);
}

LifecycleEvents::StartToken LifecycleEvents::begin_start(const ProcessRef& process) {
  StartToken token = next_token_++;
  starts_[token] = Start{process};
  if (!process.is_init()) containers_[process.container_id].live_execs.insert(process.exec_id);
  return token;
}

void LifecycleEvents::start_succeeded(StartToken token, std::uint32_t pid) {
  auto it = starts_.find(token);
  if (it == starts_.end()) return;
  ProcessRef ref = it->second.ref;
  starts_.erase(it);

  if (ref.is_init()) {
    containerd::events::TaskStart event;
    event.set_container_id(ref.container_id);
    event.set_pid(pid);
    publish("/tasks/start", event);
    publish_held_oom(ref.container_id);
  } else {
    containerd::events::TaskExecStarted event;
    event.set_container_id(ref.container_id);
    event.set_exec_id(ref.exec_id);
    event.set_pid(pid);
    publish("/tasks/exec-started", event);
  }

  PidKey key = key_of(ref.container_id, pid);
  track(key, ref);
  Tracked& tracked = by_pid_[key];
  std::optional<ProcessExit> early = std::move(tracked.exit);
  tracked.exit.reset();
  if (auto held = take_unclaimed(key)) early = held;
  drop_unclaimed_if_idle();
  if (early) reaped(key, tracked, *early);
}

void LifecycleEvents::start_failed(StartToken token) {
  auto it = starts_.find(token);
  if (it == starts_.end()) return;
  ProcessRef ref = it->second.ref;
  starts_.erase(it);
  drop_unclaimed_if_idle();
  if (!ref.is_init()) {
    exec_finished(ref.container_id, ref.exec_id);
    return;
  }
  // A failed init start: an OOM and an exit already seen are handled as usual.
  publish_held_oom(ref.container_id);
  for (auto& [key, tracked] : by_pid_) {
    if (tracked.ref != ref || !tracked.exit) continue;
    ProcessExit exit = *tracked.exit;
    tracked.exit.reset();
    reaped(key, tracked, exit);
    return;
  }
}

void LifecycleEvents::handle_exit(std::uint32_t domain, const ProcessExit& exit) {
  PidKey key{domain, static_cast<std::uint32_t>(exit.pid)};
  auto it = by_pid_.find(key);
  if (it == by_pid_.end()) {
    // Maybe the pid of a process whose start has not returned yet: keep it meanwhile.
    if (!starts_.empty() || !holds_.empty()) unclaimed_[key] = exit;
    return;
  }
  Tracked& tracked = it->second;
  bool starting = false;
  for (const auto& [token, start] : starts_) starting = starting || start.ref == tracked.ref;
  if (starting) {
    tracked.exit = exit;  // published after its start event
    return;
  }
  reaped(key, tracked, exit);
}

void LifecycleEvents::reaped(const PidKey& key, Tracked& tracked, const ProcessExit& exit) {
  ProcessRef ref = tracked.ref;
  by_pid_.erase(key);  // the pid may be reused from now on
  deferring_.reset();
  if (hooks_.on_reaped) hooks_.on_reaped(ref, exit);
  if (deferring_) {
    deferred_[*deferring_] = Deferred{ref, exit};
    deferring_.reset();
    return;
  }
  exit_ready(ref, exit);
}

LifecycleEvents::ExitToken LifecycleEvents::defer_exit() {
  deferring_ = next_token_++;
  return *deferring_;
}

void LifecycleEvents::resume_exit(ExitToken token) {
  auto it = deferred_.find(token);
  if (it == deferred_.end()) return;
  Deferred deferred = std::move(it->second);
  deferred_.erase(it);
  exit_ready(deferred.ref, deferred.exit);
}

void LifecycleEvents::exit_ready(const ProcessRef& ref, const ProcessExit& exit) {
  if (!ref.is_init()) {
    publish_exit(ref, exit);
    exec_finished(ref.container_id, ref.exec_id);
    return;
  }
  ContainerState& container = containers_[ref.container_id];
  if (!container.live_execs.empty()) {
    container.held_init_exit = exit;  // after the execs' exits
    return;
  }
  publish_exit(ref, exit);
}

void LifecycleEvents::exec_finished(const std::string& container_id, const std::string& exec_id) {
  auto it = containers_.find(container_id);
  if (it == containers_.end()) return;
  ContainerState& container = it->second;
  container.live_execs.erase(exec_id);
  if (!container.live_execs.empty() || !container.held_init_exit) return;
  ProcessExit init_exit = *container.held_init_exit;
  container.held_init_exit.reset();
  publish_exit(ProcessRef{container_id, ""}, init_exit);
}

void LifecycleEvents::publish_exit(const ProcessRef& ref, const ProcessExit& exit) {
  containerd::events::TaskExit event;
  event.set_container_id(ref.container_id);
  event.set_id(ref.is_init() ? ref.container_id : ref.exec_id);
  event.set_pid(static_cast<std::uint32_t>(exit.pid));
  event.set_exit_status(static_cast<std::uint32_t>(exit.status));
  *event.mutable_exited_at() = to_timestamp(exit.exited_at);
  publish("/tasks/exit", event);
  if (hooks_.on_exit_published) hooks_.on_exit_published(ref, exit);
}

void LifecycleEvents::deleted(const containerd::events::TaskDelete& event) {
  publish("/tasks/delete", event);
}

void LifecycleEvents::paused(const std::string& container_id) {
  containerd::events::TaskPaused event;
  event.set_container_id(container_id);
  publish("/tasks/paused", event);
}

void LifecycleEvents::resumed(const std::string& container_id) {
  containerd::events::TaskResumed event;
  event.set_container_id(container_id);
  publish("/tasks/resumed", event);
}

void LifecycleEvents::oom(const std::string& container_id) {
  // The OOM watcher sees an OOM as soon as the init runs, which may be before its start
  // call returns: the TaskOOM then waits for the TaskStart, as the exit does.
  for (const auto& [token, start] : starts_) {
    if (start.ref.container_id == container_id && start.ref.is_init()) {
      containers_[container_id].held_oom = true;
      return;
    }
  }
  containerd::events::TaskOOM event;
  event.set_container_id(container_id);
  publish("/tasks/oom", event);
}

void LifecycleEvents::publish_held_oom(const std::string& container_id) {
  auto it = containers_.find(container_id);
  if (it == containers_.end() || !it->second.held_oom) return;
  it->second.held_oom = false;
  oom(container_id);
}

void LifecycleEvents::forget(const ProcessRef& process) {
  for (auto it = by_pid_.begin(); it != by_pid_.end();) {
    bool same = process.is_init() ? it->second.ref.container_id == process.container_id
                                  : it->second.ref == process;
    it = same ? by_pid_.erase(it) : std::next(it);
  }
  if (process.is_init()) {
    containers_.erase(process.container_id);
    return;
  }
  exec_finished(process.container_id, process.exec_id);
}

std::size_t LifecycleEvents::held_exit_count() const {
  std::size_t count = unclaimed_.size();
  for (const auto& [pid, tracked] : by_pid_) count += tracked.exit ? 1 : 0;
  for (const auto& [id, container] : containers_) count += container.held_init_exit ? 1 : 0;
  return count + deferred_.size();
}

bool LifecycleEvents::settled() const {
  if (!starts_.empty() || !holds_.empty() || !deferred_.empty() || held_exit_count() != 0)
    return false;
  for (const auto& [id, container] : containers_) {
    if (container.held_oom) return false;
  }
  return true;
}

void LifecycleEvents::restore_process(const ProcessRef& process, std::uint32_t pid, bool started,
                                      bool exited) {
  ContainerState& container = containers_[process.container_id];
  if (process.is_init()) container.init_pid = pid;
  if (!process.is_init() && started && !exited) container.live_execs.insert(process.exec_id);
  if (pid != 0 && !exited) track(key_of(process.container_id, pid), process);
}

void LifecycleEvents::track(const PidKey& key, const ProcessRef& ref) {
  Tracked& tracked = by_pid_[key];
  tracked.ref = ref;
}

void LifecycleEvents::drop_unclaimed_if_idle() {
  if (starts_.empty() && holds_.empty()) unclaimed_.clear();
}

}  // namespace shim
