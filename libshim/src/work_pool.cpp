#include "shim/work_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>

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

WorkPool::WorkPool(std::size_t threads) {
  threads = std::max<std::size_t>(threads, 1);
  SignalsBlockedForNewThreads blocked;
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkPool::~WorkPool() { stop(); }

bool WorkPool::post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    jobs_.push_back(std::move(job));
  }
  work_cv_.notify_one();
  return true;
}

void WorkPool::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

std::size_t WorkPool::queued() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

void WorkPool::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping and drained
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job();
    } catch (...) {
      ++failed_jobs_;
    }
  }
}

}  // namespace shim
