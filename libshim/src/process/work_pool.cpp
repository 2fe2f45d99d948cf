#include "shim/process/work_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>

#include <fmt/format.h>

namespace shim {

namespace {

// Blocks every signal in the calling thread while alive; threads created meanwhile
// inherit the full mask.
class SignalsBlockedForNewThreads {
 public:
  SignalsBlockedForNewThreads() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved_);
  }
  ~SignalsBlockedForNewThreads() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SignalsBlockedForNewThreads(const SignalsBlockedForNewThreads&) = delete;
  SignalsBlockedForNewThreads& operator=(const SignalsBlockedForNewThreads&) = delete;

 private:
  sigset_t saved_{};
};

}  // namespace

WorkPool::WorkPool(std::size_t max_threads, std::chrono::milliseconds idle_timeout)
    : max_threads_(std::max<std::size_t>(max_threads, 1)), idle_timeout_(idle_timeout) {}

WorkPool::~WorkPool() { stop(); }

// Threads are detached; stop() waits for live_ to reach 0 instead of joining.
void WorkPool::start_thread() {
  SignalsBlockedForNewThreads blocked;
  std::thread([this] { run(); }).detach();
  ++live_;
  ++idle_;  // counts as idle until it takes a job, so one post starts one thread
}

bool WorkPool::post(std::function<void()> job) { return enqueue({std::move(job), false}); }

bool WorkPool::post_brief(std::function<void()> job) { return enqueue({std::move(job), true}); }

bool WorkPool::enqueue(Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    jobs_.push_back(std::move(job));
    if (idle_ < jobs_.size() && live_ < max_threads_) start_thread();
  }
  work_cv_.notify_one();
  return true;
}

void WorkPool::set_exception_handler(std::function<void(std::exception_ptr)> handler) {
  std::lock_guard lock(mu_);
  exception_handler_ = std::move(handler);
}

void WorkPool::set_thread_start(std::function<void()> hook) {
  std::lock_guard lock(mu_);
  thread_start_ = std::move(hook);
}

Status pool_exception_status() noexcept {
  try {
    try {
      throw;
    } catch (const StatusError& error) {
      if (!error.status().ok()) return error.status();
      return Status(Code::kInternal, "work on the pool threw an OK status");
    } catch (const std::exception& error) {
      return Status(Code::kInternal, fmt::format("work on the pool threw: {}", error.what()));
    } catch (...) {
      return Status(Code::kInternal, "work on the pool threw a non-standard exception");
    }
  } catch (...) {  // out of memory while formatting
    return Status(Code::kInternal, "work on the pool threw");
  }
}

void WorkPool::stop() {
  std::unique_lock lock(mu_);
  stopping_ = true;
  work_cv_.notify_all();
  exited_cv_.wait(lock, [&] { return live_ == 0; });
}

std::size_t WorkPool::queued() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

std::size_t WorkPool::thread_count() const {
  std::lock_guard lock(mu_);
  return live_;
}

void WorkPool::run() {
  std::function<void()> start;
  {
    std::lock_guard lock(mu_);
    start = thread_start_;
  }
  if (start) {
    try {
      start();
    } catch (...) {
      ++failed_jobs_;
    }
  }
  std::unique_lock lock(mu_);
  for (;;) {
    bool woke = work_cv_.wait_for(lock, idle_timeout_, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty() && (stopping_ || !woke)) break;  // drained and stopping, or idle too long
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    --idle_;
    lock.unlock();
    try {
      job.run();
    } catch (...) {
      ++failed_jobs_;
      std::function<void(std::exception_ptr)> handler;
      {
        std::lock_guard handler_lock(mu_);
        handler = exception_handler_;
      }
      if (handler) {
        try {
          handler(std::current_exception());
        } catch (...) {  // the handler's own failure (logging out of memory) is only counted
        }
      }
    }
    lock.lock();
    ++idle_;
    if (job.brief && live_ > 1 && jobs_.empty()) break;  // another thread stays for the rest
  }
  --idle_;
  --live_;
  exited_cv_.notify_all();  // under the lock: stop() cannot return and destroy us first
}

}  // namespace shim
