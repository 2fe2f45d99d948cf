#include "shim/process/exit_future.h"

#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

namespace shim {

namespace detail {

struct ExitState {
  struct Waiter {
    boost::asio::any_io_executor executor;
    ExitWaitCallback callback;
  };

  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  std::optional<ProcessExit> exit;
  std::vector<Waiter> waiters;
};

}  // namespace detail

namespace {

void post_result(const boost::asio::any_io_executor& executor, ExitWaitCallback callback,
                 const std::optional<ProcessExit>& exit) {
  boost::asio::post(executor, [callback = std::move(callback), exit] { callback(exit); });
}

}  // namespace

bool ExitFuture::ready() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mu);
  return state_->done;
}

std::optional<ProcessExit> ExitFuture::wait() const {
  if (!state_) return std::nullopt;
  std::unique_lock lock(state_->mu);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  return state_->exit;
}

std::optional<ProcessExit> ExitFuture::wait_for(std::chrono::milliseconds timeout) const {
  if (!state_) return std::nullopt;
  std::unique_lock lock(state_->mu);
  if (!state_->done_cv.wait_for(lock, timeout, [&] { return state_->done; }))
    return std::nullopt;
  return state_->exit;
}

void ExitFuture::async_wait(boost::asio::any_io_executor executor,
                            ExitWaitCallback callback) const {
  if (!state_) {
    post_result(executor, std::move(callback), std::nullopt);
    return;
  }
  std::unique_lock lock(state_->mu);
  if (!state_->done) {
    state_->waiters.push_back({std::move(executor), std::move(callback)});
    return;
  }
  std::optional<ProcessExit> exit = state_->exit;
  lock.unlock();
  post_result(executor, std::move(callback), exit);
}

ExitPromise::ExitPromise() : state_(std::make_shared<detail::ExitState>()) {}

ExitPromise::~ExitPromise() { abandon(); }

ExitPromise& ExitPromise::operator=(ExitPromise&& other) noexcept {
  if (this == &other) return *this;
  abandon();
  state_ = std::move(other.state_);
  return *this;
}

void ExitPromise::set(const ProcessExit& exit) { complete(exit); }

void ExitPromise::abandon() { complete(std::nullopt); }

void ExitPromise::complete(const std::optional<ProcessExit>& exit) {
  if (!state_) return;
  std::vector<detail::ExitState::Waiter> waiters;
  {
    std::lock_guard lock(state_->mu);
    if (state_->done) return;
    state_->done = true;
    state_->exit = exit;
    waiters.swap(state_->waiters);
  }
  state_->done_cv.notify_all();
  // Posted outside the lock: a callback may call back into the future.
  for (auto& waiter : waiters) post_result(waiter.executor, std::move(waiter.callback), exit);
}

}  // namespace shim
