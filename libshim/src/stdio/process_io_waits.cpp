// ProcessIO's waits for its output: drained (copied out of the process's pipes),
// delivered (and read from the FIFOs by the client) and settled (delivered, or no byte
// moved for a while). See shim/stdio/process_io.h for what each promises.
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include "stdio/fifo_delivery.h"
#include "stdio/process_io_impl.h"

namespace shim {

using stdio::Fd;
using SteadyClock = std::chrono::steady_clock;

void ProcessIO::Impl::wait_drained(std::chrono::milliseconds timeout,
                                   std::function<void(bool)> callback) {
  if (drained() || closed_) {
    bool drained_now = drained();
    boost::asio::post(executor_,
                      [callback = std::move(callback), drained_now] { callback(drained_now); });
    return;
  }
  std::uint64_t id = next_waiter_id_++;
  auto timer = std::make_shared<boost::asio::steady_timer>(executor_, timeout);
  waiters_.push_back(DrainWaiter{id, timer, std::move(callback)});
  timer->async_wait([weak = weak_from_this(), id](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    for (auto it = self->waiters_.begin(); it != self->waiters_.end(); ++it) {
      if (it->id != id) continue;
      auto expired = std::move(it->callback);
      self->waiters_.erase(it);
      expired(false);
      return;
    }
  });
}

std::vector<Fd> ProcessIO::Impl::probe_copies() const {
  std::vector<Fd> readers;
  for (const Fd& probe : delivery_probes_) {
    if (probe.valid()) readers.emplace_back(::fcntl(probe.get(), F_DUPFD_CLOEXEC, 0));
  }
  return readers;
}

std::pair<std::uint64_t, std::size_t> ProcessIO::Impl::output_progress() const {
  std::size_t unread = 0;
  for (const Fd& probe : delivery_probes_) unread += stdio::unread_bytes(probe.get());
  return {copied_bytes(StdioStream::kStdout) + copied_bytes(StdioStream::kStderr), unread};
}

void ProcessIO::Impl::wait_delivered(std::chrono::milliseconds timeout,
                                     std::function<void(bool)> callback) {
  const auto deadline = SteadyClock::now() + timeout;
  auto after_drain = [weak = weak_from_this(), deadline, callback](bool drained) mutable {
    auto self = weak.lock();
    if (!self || !drained || self->closed_) return callback(false);
    stdio::wait_until_read(self->executor_, self->probe_copies(),
                           stdio::FifoReadWait{.deadline = deadline}, std::move(callback));
  };
  wait_drained(timeout, std::move(after_drain));
}

void ProcessIO::Impl::wait_settled(std::chrono::milliseconds timeout,
                                   std::chrono::milliseconds stall,
                                   std::function<void(bool)> callback) {
  settle_step(SteadyClock::now() + timeout, stall, output_progress(), std::move(callback));
}

// Waits for the drain `stall` at a time, going on while the copies or the client moved.
void ProcessIO::Impl::settle_step(SteadyClock::time_point deadline, std::chrono::milliseconds stall,
                                  std::pair<std::uint64_t, std::size_t> before,
                                  std::function<void(bool)> callback) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  auto after = [weak = weak_from_this(), deadline, stall, before, callback](bool drained) mutable {
    auto self = weak.lock();
    if (!self || self->closed_) return callback(false);
    if (drained) {
      return stdio::wait_until_read(self->executor_, self->probe_copies(),
                                    stdio::FifoReadWait{.deadline = deadline, .stall = stall},
                                    std::move(callback));
    }
    auto now = self->output_progress();
    if (now == before || SteadyClock::now() >= deadline) return callback(false);
    self->settle_step(deadline, stall, now, std::move(callback));
  };
  wait_drained(std::clamp(left, std::chrono::milliseconds(0), stall), std::move(after));
}

void ProcessIO::Impl::notify_drained(bool drained) {
  std::vector<DrainWaiter> waiters = std::move(waiters_);
  waiters_.clear();
  for (DrainWaiter& waiter : waiters) {
    waiter.timer->cancel();
    boost::asio::post(executor_,
                      [callback = std::move(waiter.callback), drained] { callback(drained); });
  }
}

std::uint64_t ProcessIO::Impl::copied_bytes(StdioStream stream) const {
  if (terminal_) return terminal_->copied_bytes(stream);
  const auto& copier = copiers_[stream_index(stream)];
  return copier ? copier->bytes() : 0;
}

std::uint64_t ProcessIO::Impl::buffered_bytes(StdioStream stream) const {
  const auto& copier = copiers_[stream_index(stream)];
  return copier ? copier->buffered() : 0;
}

std::uint64_t ProcessIO::Impl::dropped_bytes(StdioStream stream) const {
  const auto& copier = copiers_[stream_index(stream)];
  return copier ? copier->dropped() : 0;
}

}  // namespace shim
