// WorkPool: a bounded number of threads for blocking work (running `runc ...` and waiting
// for it), so the event loop never blocks and the thread count never grows with load.
// Threads start on demand and leave after `idle_timeout` without work, so an idle shim
// is a single thread (the loop) and a busy one at most 1 + max_threads.
//
// Threads are created with every signal blocked: signals are for the loop's signalfd, and
// a pool thread must not take a SIGCHLD or SIGTERM meant for it. Results go back to the
// loop by posting to its executor (post_and_reply below does that).
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include "shim/process/call_deadline.h"
#include "shim/status.h"

namespace shim {

class WorkPool {
 public:
  // `max_threads` is clamped to at least 1.
  explicit WorkPool(std::size_t max_threads = 2,
                    std::chrono::milliseconds idle_timeout = std::chrono::seconds(10));
  ~WorkPool();  // stop()
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Queues `job` (FIFO). false, and `job` is dropped, once stop() has begun. Jobs report
  // their own errors; an exception escaping a job is counted and handed to the exception
  // handler, if one is set.
  bool post(std::function<void()> job);
  // As post(), for a rare job that only waits (on the kernel): the thread that ran it
  // leaves at once if another pool thread is alive, rather than staying idle for
  // idle_timeout, so such a job does not raise the shim's thread count for long.
  bool post_brief(std::function<void()> job);

  // Called on the pool thread with each exception that escapes a job (the shim's daemon
  // logs it). Set it before the first post().
  void set_exception_handler(std::function<void(std::exception_ptr)> handler);

  // Runs `hook` first on every thread started after this call, before its first job. A
  // thread inherits its creator's per-thread state (namespaces), and the loop thread that
  // starts most pool threads may have entered a pod's namespaces (shim/linux/pod_sandbox.h):
  // the hook moves each new thread back to the host's. It must not throw (an exception
  // is counted as a failed job and dropped). Any thread.
  void set_thread_start(std::function<void()> hook);

  // Runs the jobs already queued, then joins the threads. Idempotent. Must not be called
  // from a pool thread.
  void stop();

  // Threads alive now (0 when idle long enough) and the bound.
  std::size_t thread_count() const;
  std::size_t max_threads() const { return max_threads_; }
  std::size_t queued() const;
  std::size_t failed_jobs() const { return failed_jobs_.load(); }

 private:
  void run();
  void start_thread();  // with mu_ held

  const std::size_t max_threads_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable exited_cv_;
  struct Job {
    std::function<void()> run;
    bool brief = false;
  };
  bool enqueue(Job job);  // post() and post_brief()

  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::size_t live_ = 0;  // threads running run()
  std::size_t idle_ = 0;  // of those, waiting for a job
  std::atomic<std::size_t> failed_jobs_{0};
  std::function<void(std::exception_ptr)> exception_handler_;
  std::function<void()> thread_start_;
};

// Pool work whose result can carry an error: a Status, or a struct with a `status` member.
template <class Result>
concept StatusCarrying = std::same_as<Result, Status> || requires(Result result) {
  { result.status } -> std::same_as<Status&>;
};

// A default Result whose status is `status`.
template <StatusCarrying Result>
Result result_with_status(Status status) {
  if constexpr (std::is_same_v<Result, Status>) {
    return status;
  } else {
    Result result{};
    result.status = std::move(status);
    return result;
  }
}

// Internal "work on the pool threw: <what()>" for the exception being handled (a
// StatusError keeps its status). Call it only inside a catch block.
Status pool_exception_status() noexcept;

// Runs `work()` on the pool, then `reply(result)` (or `reply()` for void work) on `loop`.
// Both callables must be copyable (std::function). false if the pool is stopping.
// The caller's call deadline (shim/process/call_deadline.h) holds in `work` too.
// Work that may fail should return a StatusCarrying result: if it throws, `reply` still
// runs, with pool_exception_status(). Other work that throws gets no reply; the
// exception goes to the pool's exception handler.
template <class Work, class Reply>
bool post_and_reply(WorkPool& pool, boost::asio::any_io_executor loop, Work work, Reply reply) {
  return pool.post([loop, deadline = current_call_deadline(), work = std::move(work),
                    reply = std::move(reply)]() mutable {
    CallDeadlineScope scope(deadline);
    using Result = std::invoke_result_t<Work&>;
    if constexpr (std::is_void_v<Result>) {
      work();
      boost::asio::post(loop, std::move(reply));
    } else {
      auto run = [&]() -> Result {
        if constexpr (StatusCarrying<Result>) {
          try {
            return work();
          } catch (...) {
            return result_with_status<Result>(pool_exception_status());
          }
        } else {
          return work();
        }
      };
      boost::asio::post(
          loop, [reply = std::move(reply), result = run()]() mutable { reply(std::move(result)); });
    }
  });
}

}  // namespace shim
