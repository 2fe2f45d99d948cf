// An event loop with a SignalfdReaper on its own thread, for scenarios run through
// run_in_child() (isolated_child.h). Construct it before any other thread: it blocks
// SIGCHLD (and SIGUSR1 for the watcher tests) in the calling thread first.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "process/signal_watcher.h"
#include "process/signalfd_reaper.h"

namespace shim_test {

class LoopWithReaper {
 public:
  LoopWithReaper()
      : blocked_(shim::SignalWatcher::block_in_this_thread({SIGCHLD, SIGUSR1})),
        signals(io.get_executor()),
        reaper(io.get_executor(), signals) {
    start_status = reaper.start();
    thread_ = std::thread([this] { io.run(); });
  }
  ~LoopWithReaper() {
    run_on_loop([this] {
      reaper.stop();
      signals.close();
    });
    guard_.reset();
    io.stop();
    thread_.join();
  }
  LoopWithReaper(const LoopWithReaper&) = delete;
  LoopWithReaper& operator=(const LoopWithReaper&) = delete;

  // Runs `fn` on the loop thread and waits for it.
  template <class Fn>
  void run_on_loop(Fn fn) {
    std::promise<void> done;
    boost::asio::post(io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

  std::thread::id loop_thread_id() const { return thread_.get_id(); }

  boost::asio::io_context io;

 private:
  shim::Status blocked_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_{
      io.get_executor()};

 public:
  shim::SignalWatcher signals;
  shim::SignalfdReaper reaper;
  shim::Status start_status;

 private:
  std::thread thread_;
};

// Collects fanned-out exits.
class ExitCollector {
 public:
  shim::ExitCallback callback() {
    return [this](const shim::ProcessExit& exit) {
      {
        std::lock_guard lock(mu_);
        exits_.push_back(exit);
        threads_.push_back(std::this_thread::get_id());
      }
      cv_.notify_all();
    };
  }
  bool wait_for_count(std::size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return exits_.size() >= count; });
  }
  std::vector<shim::ProcessExit> exits() const {
    std::lock_guard lock(mu_);
    return exits_;
  }
  std::vector<std::thread::id> threads() const {
    std::lock_guard lock(mu_);
    return threads_;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return exits_.size();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<shim::ProcessExit> exits_;
  std::vector<std::thread::id> threads_;
};

// No child left at all, zombie or alive.
inline bool no_children_left() {
  int status = 0;
  return ::waitpid(-1, &status, WNOHANG | __WALL) == -1 && errno == ECHILD;
}

}  // namespace shim_test
