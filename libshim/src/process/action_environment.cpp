#include "shim/process/action_environment.h"

#include <signal.h>

#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "process/posix_spawner.h"
#include "process/signal_watcher.h"
#include "process/signalfd_reaper.h"

namespace shim {

class ActionEnvironment::Impl {
 public:
  Impl() {
    status_ = SignalWatcher::block_in_this_thread({SIGCHLD});
    // Not a subreaper: an action is a short-lived child of containerd.
    reaper_ = std::make_unique<SignalfdReaper>(loop_.get_executor(),
                                               ReaperOptions{.child_subreaper = false});
    if (status_.ok()) status_ = reaper_->start();
    thread_ = std::thread([this] { loop_.run(); });
  }

  ~Impl() {
    work_.reset();
    boost::asio::post(loop_, [this] { reaper_->stop(); });
    loop_.stop();
    if (thread_.joinable()) thread_.join();
  }

  SignalfdReaper& reaper() { return *reaper_; }
  const Status& status() const { return status_; }
  PosixSpawner& spawner() { return spawner_; }

 private:
  boost::asio::io_context loop_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{loop_.get_executor()};
  std::unique_ptr<SignalfdReaper> reaper_;
  PosixSpawner spawner_;
  std::thread thread_;
  Status status_;
};

ActionEnvironment::ActionEnvironment() : impl_(std::make_unique<Impl>()) {}
ActionEnvironment::~ActionEnvironment() = default;
Reaper& ActionEnvironment::reaper() { return impl_->reaper(); }
Spawner& ActionEnvironment::spawner() { return impl_->spawner(); }
Status ActionEnvironment::status() const { return impl_->status(); }

}  // namespace shim
