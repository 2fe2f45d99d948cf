#include "process/signal_watcher.h"

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <fmt/format.h>

namespace shim {

class SignalWatcher::Impl : public std::enable_shared_from_this<SignalWatcher::Impl> {
 public:
  explicit Impl(boost::asio::any_io_executor executor) : descriptor_(std::move(executor)) {
    sigemptyset(&mask_);
  }

  Status watch(int signo, Handler handler) {
    if (closed_) return failed_precondition("watch signal: watcher closed");
    if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP)
      return invalid_argument(fmt::format("watch signal {}", signo));
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, signo);
    if (int rc = pthread_sigmask(SIG_BLOCK, &one, nullptr); rc != 0)
      return unknown(fmt::format("block signal {}: {}", signo, std::strerror(rc)));
    sigset_t mask = mask_;
    sigaddset(&mask, signo);
    if (Status status = update_fd(mask); !status.ok()) return status;
    mask_ = mask;
    handlers_[signo] = std::move(handler);
    arm();
    return {};
  }

  void unwatch(int signo) {
    handlers_.erase(signo);
    if (signo <= 0 || signo >= NSIG || !descriptor_.is_open()) return;
    sigdelset(&mask_, signo);
    ::signalfd(descriptor_.native_handle(), &mask_, 0);
  }

  void close() {
    closed_ = true;
    handlers_.clear();
    boost::system::error_code ignored;
    descriptor_.close(ignored);
  }

 private:
  Status update_fd(const sigset_t& mask) {
    if (descriptor_.is_open()) {
      if (::signalfd(descriptor_.native_handle(), &mask, 0) < 0)
        return unknown(fmt::format("signalfd: {}", std::strerror(errno)));
      return {};
    }
    int fd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0) return unknown(fmt::format("signalfd: {}", std::strerror(errno)));
    boost::system::error_code ec;
    descriptor_.assign(fd, ec);
    if (ec) {
      ::close(fd);
      return unknown(fmt::format("signalfd: register with the loop: {}", ec.message()));
    }
    return {};
  }

  void arm() {
    if (armed_ || closed_) return;
    armed_ = true;
    descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                           [self = shared_from_this()](const boost::system::error_code& ec) {
                             self->armed_ = false;
                             if (ec || self->closed_) return;
                             self->read_all();
                             self->arm();
                           });
  }

  // Reads every queued siginfo (the fd is non-blocking) and runs its handler.
  void read_all() {
    std::array<signalfd_siginfo, 16> infos{};
    while (!closed_) {
      ssize_t n = ::read(descriptor_.native_handle(), infos.data(), sizeof(infos));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // EAGAIN: drained
      std::size_t count = static_cast<std::size_t>(n) / sizeof(signalfd_siginfo);
      for (std::size_t i = 0; i < count && !closed_; ++i) dispatch(infos[i]);
    }
  }

  void dispatch(const signalfd_siginfo& raw) {
    auto it = handlers_.find(static_cast<int>(raw.ssi_signo));
    if (it == handlers_.end()) return;
    Handler handler = it->second;  // a copy: the handler may unwatch itself
    handler(SignalInfo{static_cast<int>(raw.ssi_signo), raw.ssi_code,
                       static_cast<pid_t>(raw.ssi_pid), static_cast<uid_t>(raw.ssi_uid)});
  }

  boost::asio::posix::stream_descriptor descriptor_;
  sigset_t mask_{};
  std::map<int, Handler> handlers_;
  bool armed_ = false;
  bool closed_ = false;
};

SignalWatcher::SignalWatcher(boost::asio::any_io_executor executor)
    : impl_(std::make_shared<Impl>(std::move(executor))) {}

SignalWatcher::~SignalWatcher() { close(); }

Status SignalWatcher::block_in_this_thread(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : signals) {
    if (sigaddset(&set, signo) != 0) return invalid_argument(fmt::format("block signal {}", signo));
  }
  if (int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0)
    return unknown(fmt::format("block signals: {}", std::strerror(rc)));
  return {};
}

Status SignalWatcher::watch(int signo, Handler handler) {
  return impl_->watch(signo, std::move(handler));
}

void SignalWatcher::unwatch(int signo) { impl_->unwatch(signo); }

void SignalWatcher::close() { impl_->close(); }

}  // namespace shim
