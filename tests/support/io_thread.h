// An io_context running on its own thread, for tests that need a live executor.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace shim::test {

class IoThread {
 public:
  IoThread();
  // Stops the context (pending handlers are destroyed, not run) and joins.
  ~IoThread();
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  boost::asio::io_context& context() { return context_; }
  boost::asio::any_io_executor executor() { return context_.get_executor(); }

  // Runs `fn` on the io thread and returns its result (or rethrows its exception).
  // Throws if it does not finish within `timeout`.
  template <class Fn>
  auto run(Fn fn, std::chrono::milliseconds timeout = std::chrono::seconds(10))
      -> std::invoke_result_t<Fn> {
    // Shared: a task that times out may still run after we have thrown.
    auto task = std::make_shared<std::packaged_task<std::invoke_result_t<Fn>()>>(std::move(fn));
    auto result = task->get_future();
    boost::asio::post(context_, [task] { (*task)(); });
    if (result.wait_for(timeout) != std::future_status::ready) {
      throw std::runtime_error("IoThread::run: timed out");
    }
    return result.get();
  }

  // Waits until every handler posted before this call has run.
  void drain() {
    run([] {});
  }

 private:
  boost::asio::io_context context_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace shim::test
