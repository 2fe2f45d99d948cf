#include "linux/pod_holder_state.h"

#include <signal.h>

#include <fmt/format.h>

namespace shim::linux_pod {

void HolderState::watch(shim::Reaper& reaper, shim::SandboxEvents& events) {
  // A weak pointer: the reaper keeps the callback until unwatch(), which the state's
  // owner calls; the state must not keep itself alive through it.
  std::weak_ptr<HolderState> weak = weak_from_this();
  shim::Subscription subscription =
      reaper.subscribe([weak, &events](const shim::ProcessExit& exit) {
        if (auto self = weak.lock()) self->on_exit(exit, events);
      });
  std::lock_guard lock(mu_);
  subscription_ = std::move(subscription);
}

void HolderState::adopt(shim::ProcessHandle handle) {
  std::lock_guard lock(mu_);
  pid_ = handle.pid();
  handle_ = std::move(handle);
}

bool HolderState::running() const {
  std::lock_guard lock(mu_);
  return pid_ > 0 && !exit_status_.has_value();
}

pid_t HolderState::pid() const {
  std::lock_guard lock(mu_);
  return pid_;
}

void HolderState::on_exit(const shim::ProcessExit& exit, shim::SandboxEvents& events) {
  bool report = false;
  {
    std::lock_guard lock(mu_);
    // Other children's exits (containers, runc) come here too: only the holder's counts.
    if (pid_ <= 0 || exit.pid != pid_ || exit_status_.has_value()) return;
    exit_status_ = exit.status;
    handle_.mark_reaped();
    report = !killed_by_pod_;
  }
  exited_cv_.notify_all();
  // The pod's pid 1 died by itself: every process of the pod's pid namespace went with it.
  if (report) events.exited(static_cast<std::uint32_t>(exit.status));
}

shim::Status HolderState::kill_and_wait(std::chrono::seconds timeout, std::uint32_t* exit_status) {
  std::unique_lock lock(mu_);
  if (pid_ <= 0) return shim::failed_precondition("no pid holder was started");
  killed_by_pod_ = true;
  if (!exit_status_.has_value()) {
    // NotFound: already dead, not yet reported; the wait below gets its status.
    if (shim::Status s = handle_.signal(SIGKILL); !s.ok() && s.code() != shim::Code::kNotFound) {
      return shim::Status(s.code(), fmt::format("kill pid holder {}: {}", pid_, s.message()));
    }
  }
  if (!exited_cv_.wait_for(lock, timeout, [&] { return exit_status_.has_value(); })) {
    return shim::Status(shim::Code::kDeadlineExceeded,
                        fmt::format("pid holder {} killed but its exit was not reaped within {}s",
                                    pid_, timeout.count()));
  }
  *exit_status = static_cast<std::uint32_t>(*exit_status_);
  return {};
}

HolderState::Saved HolderState::save() const {
  std::lock_guard lock(mu_);
  return Saved{pid_, handle_.pidfd(), killed_by_pod_, exit_status_};
}

void HolderState::restore(const Saved& saved, shim::ProcessHandle handle) {
  std::lock_guard lock(mu_);
  pid_ = saved.pid;
  killed_by_pod_ = saved.killed_by_pod;
  exit_status_ = saved.exit_status;
  handle_ = std::move(handle);
  if (exit_status_) handle_.mark_reaped();
}

void HolderState::unwatch() {
  shim::Subscription subscription;
  {
    std::lock_guard lock(mu_);
    subscription = std::move(subscription_);
  }
  subscription.reset();  // outside mu_: cancelling waits for a running on_exit
}

}  // namespace shim::linux_pod
