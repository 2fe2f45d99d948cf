#include "process/signalfd_reaper.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

namespace shim {

namespace {

// One subscriber's queue. `mu` guards the queue and flags; `call_mu` is held while the
// callback runs, so that cancelling waits for a running callback (recursive: a callback
// may cancel its own subscription).
struct Subscriber {
  Subscriber(boost::asio::any_io_executor ex, ExitCallback cb)
      : executor(std::move(ex)), callback(std::move(cb)) {}

  boost::asio::any_io_executor executor;
  ExitCallback callback;
  std::recursive_mutex call_mu;
  std::mutex mu;
  std::deque<ProcessExit> queue;
  bool draining = false;  // a drain handler is posted or running
  bool cancelled = false;
};

using SubscriberPtr = std::shared_ptr<Subscriber>;

void drain_one(const SubscriberPtr& subscriber);

void schedule_drain(const SubscriberPtr& subscriber) {
  boost::asio::post(subscriber->executor, [subscriber] { drain_one(subscriber); });
}

// Reposts the drain while exits are queued, also when the callback threw.
class DrainContinuation {
 public:
  explicit DrainContinuation(const SubscriberPtr& subscriber) : subscriber_(subscriber) {}
  ~DrainContinuation() {
    std::lock_guard lock(subscriber_->mu);
    if (subscriber_->cancelled || subscriber_->queue.empty()) {
      subscriber_->draining = false;
      return;
    }
    schedule_drain(subscriber_);
  }
  DrainContinuation(const DrainContinuation&) = delete;
  DrainContinuation& operator=(const DrainContinuation&) = delete;

 private:
  const SubscriberPtr& subscriber_;
};

// Delivers one exit per handler: a busy subscriber cannot monopolise a shared loop.
void drain_one(const SubscriberPtr& subscriber) {
  std::lock_guard call(subscriber->call_mu);
  ProcessExit exit;
  {
    std::lock_guard lock(subscriber->mu);
    if (subscriber->cancelled || subscriber->queue.empty()) {
      subscriber->draining = false;
      return;
    }
    exit = subscriber->queue.front();
    subscriber->queue.pop_front();
  }
  DrainContinuation next(subscriber);
  subscriber->callback(exit);
}

void cancel_subscriber(const SubscriberPtr& subscriber) {
  std::lock_guard call(subscriber->call_mu);
  std::lock_guard lock(subscriber->mu);
  subscriber->cancelled = true;
  subscriber->queue.clear();
}

}  // namespace

class SignalfdReaper::Impl : public std::enable_shared_from_this<SignalfdReaper::Impl> {
 public:
  Impl(boost::asio::any_io_executor executor, ReaperOptions options)
      : executor_(std::move(executor)), options_(std::move(options)) {
    if (!options_.now) options_.now = [] { return std::chrono::system_clock::now(); };
  }

  const boost::asio::any_io_executor& executor() const { return executor_; }
  const ReaperOptions& options() const { return options_; }
  bool stopped() const {
    std::lock_guard lock(mu_);
    return stopped_;
  }

  void reap_pass() {
    std::lock_guard pass(reap_mu_);
    std::vector<ProcessExit> exits;
    for (;;) {
      int wait_status = 0;
      pid_t pid = ::waitpid(-1, &wait_status, WNOHANG | __WALL);
      if (pid > 0) {
        exits.push_back(make_process_exit(pid, wait_status, options_.now()));
        continue;
      }
      if (pid < 0 && errno == EINTR) continue;
      break;  // 0: the remaining children are alive; ECHILD: no children at all
    }
    dispatch(exits);
  }

  Subscription subscribe(boost::asio::any_io_executor executor, ExitCallback callback) {
    auto subscriber = std::make_shared<Subscriber>(std::move(executor), std::move(callback));
    {
      std::lock_guard lock(mu_);
      if (stopped_) return Subscription();
      subscribers_.push_back(subscriber);
    }
    std::weak_ptr<Impl> weak_self = weak_from_this();
    std::weak_ptr<Subscriber> weak_subscriber = subscriber;
    return Subscription([weak_self, weak_subscriber] {
      auto subscriber = weak_subscriber.lock();
      if (!subscriber) return;
      cancel_subscriber(subscriber);
      if (auto self = weak_self.lock()) self->remove(subscriber);
    });
  }

  Status spawn_claimed(Spawner& spawner, const SpawnRequest& request, ClaimedProcess* process) {
    std::uint64_t ticket = 0;
    {
      std::lock_guard lock(mu_);
      if (stopped_) return unavailable(fmt::format("spawn {}: reaper stopped", request.path));
      ticket = next_ticket_++;
      spawns_in_flight_.insert(ticket);
    }
    SpawnedProcess spawned;
    Status status = spawner.spawn(request, &spawned);  // no lock held across fork/exec

    ExitPromise promise;
    ExitFuture future = promise.future();
    std::optional<ProcessExit> early_exit;
    std::vector<SubscriberPtr> to_schedule;
    // A child that failed to exec may have been reaped by a reap pass that has not
    // dispatched it yet (waitpid runs before dispatch takes mu_): let that pass finish, so
    // its exit is parked under our still-open ticket and swallowed below instead of being
    // fanned out once the ticket is gone. A successful spawn needs no wait: its claim
    // catches the exit whenever dispatch runs.
    std::unique_lock<std::mutex> pass;
    if (!status.ok() && spawned.pid > 0) pass = std::unique_lock(reap_mu_);
    {
      std::lock_guard lock(mu_);
      spawns_in_flight_.erase(ticket);
      // On failure this swallows the exit of the child that failed to exec.
      if (spawned.pid > 0) early_exit = take_parked_locked(spawned.pid, ticket);
      if (status.ok() && !early_exit && !stopped_) claims_[spawned.pid] = std::move(promise);
      if (status.ok() && early_exit) {
        ++stats_.claimed;
        ++stats_.claimed_from_parked;
      }
      release_parked_locked(&to_schedule);
    }
    if (early_exit && status.ok()) promise.set(*early_exit);
    for (const auto& subscriber : to_schedule) schedule_drain(subscriber);
    if (!status.ok()) return status;
    process->pid = spawned.pid;
    process->handle = std::move(spawned.handle);
    process->exit = std::move(future);
    return {};
  }

  Status claim_running(pid_t pid, ExitFuture* exit) {
    if (pid <= 0) return invalid_argument(fmt::format("claim of pid {}: not a pid", pid));
    std::lock_guard lock(mu_);
    if (stopped_) return unavailable(fmt::format("claim of pid {}: reaper stopped", pid));
    if (claims_.count(pid) != 0) {
      return failed_precondition(fmt::format("claim of pid {}: claimed already", pid));
    }
    ExitPromise promise;
    *exit = promise.future();
    claims_[pid] = std::move(promise);
    return {};
  }

  void stop() {
    std::unordered_map<pid_t, ExitPromise> claims;  // abandoned when destroyed
    std::vector<SubscriberPtr> subscribers;
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
      claims.swap(claims_);
      subscribers.swap(subscribers_);
      parked_.clear();
    }
    for (const auto& subscriber : subscribers) {
      std::lock_guard lock(subscriber->mu);
      subscriber->cancelled = true;
      subscriber->queue.clear();
    }
  }

  ReaperStats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

  bool fan_out_idle() const {
    std::lock_guard lock(mu_);
    if (!parked_.empty() || !spawns_in_flight_.empty()) return false;
    for (const auto& subscriber : subscribers_) {
      std::lock_guard queue(subscriber->mu);
      if (!subscriber->queue.empty() || subscriber->draining) return false;
    }
    return true;
  }

 private:
  struct Parked {
    ProcessExit exit;
    std::uint64_t newest_ticket;  // the newest spawn ticket issued when it was reaped
  };

  void dispatch(const std::vector<ProcessExit>& exits) {
    std::vector<std::pair<ExitPromise, ProcessExit>> claimed;
    std::vector<SubscriberPtr> to_schedule;
    {
      std::lock_guard lock(mu_);
      ++stats_.wakeups;
      stats_.reaped += exits.size();
      for (const auto& exit : exits) {
        if (auto it = claims_.find(exit.pid); it != claims_.end()) {
          claimed.emplace_back(std::move(it->second), exit);
          claims_.erase(it);
          ++stats_.claimed;
          continue;
        }
        if (!spawns_in_flight_.empty()) {
          parked_.push_back({exit, next_ticket_ - 1});  // may be a spawn's own child
          ++stats_.parked;
          continue;
        }
        fan_out_locked(exit, &to_schedule);
      }
    }
    for (auto& [promise, exit] : claimed) promise.set(exit);
    for (const auto& subscriber : to_schedule) schedule_drain(subscriber);
  }

  // Only an exit reaped after `ticket` was issued can be the child of that spawn: an
  // older exit with the same pid belonged to a process whose pid was reused since.
  std::optional<ProcessExit> take_parked_locked(pid_t pid, std::uint64_t ticket) {
    for (auto it = parked_.begin(); it != parked_.end(); ++it) {
      if (it->exit.pid != pid || it->newest_ticket < ticket) continue;
      ProcessExit exit = it->exit;
      parked_.erase(it);
      return exit;
    }
    return std::nullopt;
  }

  // Fans out, in reap order, the parked exits no outstanding spawn can own.
  void release_parked_locked(std::vector<SubscriberPtr>* to_schedule) {
    while (!parked_.empty()) {
      const Parked& front = parked_.front();
      if (!spawns_in_flight_.empty() && *spawns_in_flight_.begin() <= front.newest_ticket) return;
      fan_out_locked(front.exit, to_schedule);
      parked_.pop_front();
    }
  }

  void fan_out_locked(const ProcessExit& exit, std::vector<SubscriberPtr>* to_schedule) {
    ++stats_.fanned_out;
    for (const auto& subscriber : subscribers_) {
      std::lock_guard lock(subscriber->mu);
      if (subscriber->cancelled) continue;
      subscriber->queue.push_back(exit);
      if (subscriber->draining) continue;
      subscriber->draining = true;
      to_schedule->push_back(subscriber);
    }
  }

  void remove(const SubscriberPtr& subscriber) {
    std::lock_guard lock(mu_);
    std::erase(subscribers_, subscriber);
  }

  boost::asio::any_io_executor executor_;
  ReaperOptions options_;
  std::mutex reap_mu_;  // serializes reap passes, so fan-out follows reap order
  mutable std::mutex mu_;
  bool stopped_ = false;
  std::uint64_t next_ticket_ = 1;
  std::set<std::uint64_t> spawns_in_flight_;
  std::unordered_map<pid_t, ExitPromise> claims_;
  std::deque<Parked> parked_;
  std::vector<SubscriberPtr> subscribers_;
  ReaperStats stats_;
};

SignalfdReaper::SignalfdReaper(boost::asio::any_io_executor executor, SignalWatcher& signals,
                               ReaperOptions options)
    : signals_(signals), impl_(std::make_shared<Impl>(std::move(executor), std::move(options))) {}

SignalfdReaper::SignalfdReaper(boost::asio::any_io_executor executor, ReaperOptions options)
    : own_signals_(std::make_unique<SignalWatcher>(executor)),
      signals_(*own_signals_),
      impl_(std::make_shared<Impl>(std::move(executor), std::move(options))) {}

SignalfdReaper::~SignalfdReaper() { stop(); }

Status SignalfdReaper::start() {
  if (watching_) return {};
  // A stopped reaper stays stopped: its subscribers and claims are gone.
  if (impl_->stopped()) return failed_precondition("reaper: start after stop");
  if (impl_->options().child_subreaper && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
    return unknown(fmt::format("prctl(PR_SET_CHILD_SUBREAPER): {}", std::strerror(errno)));
  }
  std::weak_ptr<Impl> weak_impl = impl_;
  Status status = signals_.watch(SIGCHLD, [weak_impl](const SignalInfo&) {
    if (auto impl = weak_impl.lock()) impl->reap_pass();
  });
  if (!status.ok()) return Status(status.code(), "reaper: " + status.message());
  watching_ = true;
  impl_->reap_pass();  // children that exited before we listened
  return {};
}

void SignalfdReaper::stop() {
  if (watching_) signals_.unwatch(SIGCHLD);
  watching_ = false;
  impl_->stop();
}

void SignalfdReaper::reap_now() { impl_->reap_pass(); }

bool SignalfdReaper::fan_out_idle() const { return impl_->fan_out_idle(); }

Subscription SignalfdReaper::subscribe(ExitCallback callback) {
  return impl_->subscribe(impl_->executor(), std::move(callback));
}

Subscription SignalfdReaper::subscribe(boost::asio::any_io_executor executor,
                                       ExitCallback callback) {
  return impl_->subscribe(std::move(executor), std::move(callback));
}

Status SignalfdReaper::claim_running(pid_t pid, ExitFuture* exit) {
  return impl_->claim_running(pid, exit);
}

Status SignalfdReaper::spawn_claimed(Spawner& spawner, const SpawnRequest& request,
                                     ClaimedProcess* process) {
  return impl_->spawn_claimed(spawner, request, process);
}

ReaperStats SignalfdReaper::stats() const { return impl_->stats(); }

}  // namespace shim
