#include "stdio/stream_copier.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

namespace shim::stdio {

namespace {

// splice() asks for this much; pipe to pipe it moves whatever fits (a full pipe is 64 KiB
// by default), so this only bounds one call.
constexpr std::size_t kSpliceChunk = std::size_t{1} << 20;
// Steps per turn on the loop before yielding, so one busy stream cannot starve the
// others or the RPCs sharing the loop.
constexpr int kStepsPerTurn = 64;
// splice() said "would block" but poll() saw both ends ready this many times in a row:
// stop trusting splice for this pair and use read/write, whose waits are unambiguous.
constexpr int kMaxFruitlessProbes = 8;
// A buffered copy's target that takes nothing for this long is treated as a reader away:
// short enough that a container never notices (a writer of 1 MiB/s fills its 64 KiB pipe in
// 60 ms), long enough that a reader that keeps up is never buffered.
constexpr std::chrono::milliseconds kBufferAfter{10};

}  // namespace

struct StreamCopier::Step {
  enum Kind { kProgress, kEof, kBlocked, kError } kind;
  Side side = Side::kNone;  // for kBlocked: which end to wait on (kNone: find out)
  shim::Status status;      // for kError
};

std::shared_ptr<StreamCopier> StreamCopier::start(boost::asio::any_io_executor executor,
                                                  std::string name, Fd source, CopyTarget target,
                                                  CopyMethod method, DoneHandler done,
                                                  std::optional<CopyBuffering> buffering) {
  auto copier =
      std::make_shared<StreamCopier>(std::move(executor), std::move(name), method, std::move(done));
  shim::Status attached = copier->attach(std::move(source), std::move(target));
  // Only a target that can be full (a pipe or FIFO) needs a buffer.
  if (attached.ok() && buffering && buffering->options.enabled() && copier->target_pollable_) {
    copier->overflow_ = buffering->options.overflow;
    copier->on_overflow_ = std::move(buffering->on_overflow);
    copier->out_ = std::make_unique<OutputBuffer>(std::move(buffering->options));
  }
  if (!attached.ok()) {
    // Report through the handler, asynchronously, like any other end of the copy.
    boost::asio::post(copier->executor_, [copier, attached] { copier->finish(attached); });
    return copier;
  }
  boost::asio::post(copier->executor_, [copier] { copier->pump(); });
  return copier;
}

StreamCopier::StreamCopier(boost::asio::any_io_executor executor, std::string name,
                           CopyMethod method, DoneHandler done)
    : executor_(executor),
      name_(std::move(name)),
      method_(method),
      done_(std::move(done)),
      source_(executor),
      target_waiter_(executor),
      full_timer_(executor) {}

shim::Status StreamCopier::attach(Fd source, CopyTarget target) {
  target_ = std::move(target.fd);
  keeper_ = std::move(target.keeper);
  boost::system::error_code ec;
  source_.assign(source.get(), ec);
  if (ec) return shim::unknown(fmt::format("{}: register source fd: {}", name_, ec.message()));
  source.release();

  struct stat st {};
  if (!target_ || !target_->valid() || ::fstat(target_->get(), &st) < 0) {
    return shim::unknown(fmt::format("{}: bad target fd", name_));
  }
  target_pollable_ = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  if (!target_pollable_) {
    // Files: splice refuses O_APPEND targets, and a shared writer must not be registered
    // with the loop twice.
    method_ = CopyMethod::kReadWrite;
    return {};
  }
  target_waiter_.assign(target_->get(), ec);
  if (ec) return shim::unknown(fmt::format("{}: register target fd: {}", name_, ec.message()));
  return {};
}

void StreamCopier::cancel() {
  if (finished_) return;
  finished_ = true;
  if (dropping_) end_episode();
  release_fds();
}

void StreamCopier::pump() {
  if (out_) return pump_buffered();
  for (int steps = 0; steps < kStepsPerTurn; ++steps) {
    if (finished_) return;
    Step step = method_ == CopyMethod::kSplice ? splice_once() : read_write_once();
    switch (step.kind) {
      case Step::kProgress:
        continue;
      case Step::kEof:
        finish({});
        return;
      case Step::kError:
        finish(step.status);
        return;
      case Step::kBlocked:
        wait(step.side);
        return;
    }
  }
  boost::asio::post(executor_, [self = shared_from_this()] {
    if (!self->finished_) self->pump();
  });
}

StreamCopier::Step StreamCopier::splice_once() {
  ssize_t n = ::splice(source_.native_handle(), nullptr, target_->get(), nullptr, kSpliceChunk,
                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (n > 0) {
    bytes_ += static_cast<std::uint64_t>(n);
    fruitless_probes_ = 0;
    return {Step::kProgress};
  }
  if (n == 0) return {Step::kEof};
  switch (errno) {
    case EINTR:
      return {Step::kProgress};
    case EAGAIN:
      return {Step::kBlocked, Side::kNone};
    case EINVAL:
    case ENOSYS:
    case EOPNOTSUPP:
      // This pair of files does not splice (nothing was moved): copy through user space.
      method_ = CopyMethod::kReadWrite;
      return {Step::kProgress};
    default:
      return {Step::kError, Side::kNone,
              shim::unknown(fmt::format("copy {}: splice: {}", name_, std::strerror(errno)))};
  }
}

StreamCopier::Step StreamCopier::read_write_once() {
  if (buffer_.empty()) buffer_.resize(kBufferSize);
  if (pending_begin_ < pending_end_) {
    ssize_t n =
        ::write(target_->get(), buffer_.data() + pending_begin_, pending_end_ - pending_begin_);
    if (n > 0) {
      pending_begin_ += static_cast<std::size_t>(n);
      bytes_ += static_cast<std::uint64_t>(n);
      return {Step::kProgress};
    }
    if (n < 0 && errno == EINTR) return {Step::kProgress};
    if (n < 0 && errno == EAGAIN && target_pollable_) return {Step::kBlocked, Side::kTarget};
    int err = n < 0 ? errno : EIO;
    return {Step::kError, Side::kNone,
            shim::unknown(fmt::format("copy {}: write: {}", name_, std::strerror(err)))};
  }
  ssize_t n = ::read(source_.native_handle(), buffer_.data(), buffer_.size());
  if (n > 0) {
    pending_begin_ = 0;
    pending_end_ = static_cast<std::size_t>(n);
    return {Step::kProgress};
  }
  if (n == 0) return {Step::kEof};
  if (errno == EINTR) return {Step::kProgress};
  if (errno == EAGAIN) return {Step::kBlocked, Side::kSource};
  return {Step::kError, Side::kNone,
          shim::unknown(fmt::format("copy {}: read: {}", name_, std::strerror(errno)))};
}

// splice() reports "would block" for an empty source and for a full target alike; a
// zero-timeout poll tells which. The loop's epoll is edge-triggered, so waiting on an end
// that is already ready would never wake: this check is what makes the wait safe (the
// loop runs on this thread, so any change after it is reported to the wait below).
StreamCopier::Side StreamCopier::blocked_side() {
  pollfd fds[2] = {{source_.native_handle(), POLLIN, 0}, {target_->get(), POLLOUT, 0}};
  if (::poll(fds, 2, 0) < 0) return Side::kNone;
  if (target_pollable_ && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP)) == 0) {
    return Side::kTarget;
  }
  if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) return Side::kSource;
  return Side::kNone;
}

void StreamCopier::wait(Side side) {
  if (side == Side::kNone) side = blocked_side();
  if (side == Side::kNone) {
    // Both ends looked ready: retry. Should splice keep refusing, fall back.
    if (++fruitless_probes_ > kMaxFruitlessProbes) method_ = CopyMethod::kReadWrite;
    boost::asio::post(executor_, [self = shared_from_this()] {
      if (!self->finished_) self->pump();
    });
    return;
  }
  auto on_ready = [self = shared_from_this()](const boost::system::error_code& ec) {
    if (self->finished_) return;
    if (ec) {
      self->finish(shim::unknown(fmt::format("copy {}: wait: {}", self->name_, ec.message())));
      return;
    }
    self->pump();
  };
  if (side == Side::kSource) {
    source_.async_wait(boost::asio::posix::stream_descriptor::wait_read, std::move(on_ready));
  } else {
    target_waiter_.async_wait(boost::asio::posix::stream_descriptor::wait_write,
                              std::move(on_ready));
  }
}

// ---- buffered copies ----

void StreamCopier::pump_buffered() {
  int steps = 0;
  while (steps < kStepsPerTurn) {
    if (finished_) return;
    ++steps;
    if (!out_->empty()) {
      // What was buffered goes first, in order.
      Step step = deliver_once();
      if (step.kind == Step::kError) return finish(step.status);
      if (step.kind == Step::kProgress) continue;
    } else {
      if (dropping_) end_episode();
      if (source_eof_) return finish({});
      Step step = method_ == CopyMethod::kSplice ? splice_once() : read_write_once();
      if (step.kind == Step::kProgress) {
        reader_stalled_ = false;  // the target takes bytes: direct again until it stalls
        continue;
      }
      if (step.kind == Step::kEof) {
        source_eof_ = true;
        continue;
      }
      if (step.kind == Step::kError) return finish(step.status);
      Side side = step.side == Side::kNone ? blocked_side() : step.side;
      if (side == Side::kNone) {
        if (++fruitless_probes_ > kMaxFruitlessProbes) method_ = CopyMethod::kReadWrite;
        break;  // retry on the next turn
      }
      if (side == Side::kSource) return wait_both(true, false);
      if (!reader_stalled_) return wait_target_or_grace();
      // The target is full. A read/write copy's chunk in hand is the oldest byte now.
      if (pending_begin_ < pending_end_) {
        shim::Status kept =
            out_->append(buffer_.data() + pending_begin_, pending_end_ - pending_begin_);
        if (!kept.ok()) return finish(kept);
        pending_begin_ = pending_end_ = 0;
      }
    }
    // The target takes nothing now (this turn saw it full): read the source into the
    // buffer meanwhile.
    while (true) {
      if (finished_) return;
      if (source_eof_) return wait_both(false, true);
      if (++steps > kStepsPerTurn) break;
      Step step = take_once();
      if (step.kind == Step::kProgress) continue;
      if (step.kind == Step::kEof) {
        source_eof_ = true;
        continue;
      }
      if (step.kind == Step::kError) return finish(step.status);
      // Source empty: wait for either end. Buffer full (kBlock): for the target only.
      return wait_both(step.side == Side::kSource, true);
    }
  }
  // Yield; the next turn starts with a write again (no wait is trusted across turns).
  boost::asio::post(executor_, [self = shared_from_this()] {
    if (!self->finished_) self->pump();
  });
}

StreamCopier::Step StreamCopier::deliver_once() {
  std::span<const char> bytes;
  if (shim::Status status = out_->front(&bytes); !status.ok()) {
    return {Step::kError, Side::kNone,
            shim::unknown(fmt::format("copy {}: {}", name_, status.message()))};
  }
  ssize_t n = ::write(target_->get(), bytes.data(), bytes.size());
  if (n > 0) {
    out_->consume(static_cast<std::size_t>(n));
    bytes_ += static_cast<std::uint64_t>(n);
    if (dropping_ && out_->size() <= out_->capacity() / 2) end_episode();
    return {Step::kProgress};
  }
  if (n < 0 && errno == EINTR) return {Step::kProgress};
  if (n < 0 && errno == EAGAIN) return {Step::kBlocked, Side::kTarget};
  int err = n < 0 ? errno : EIO;
  return {Step::kError, Side::kNone,
          shim::unknown(fmt::format("copy {}: write: {}", name_, std::strerror(err)))};
}

StreamCopier::Step StreamCopier::take_once() {
  const bool full = out_->room() == 0;
  // kDrop: discard at the bound, and once discarding, until the buffer is back at half.
  const bool discard = overflow_ == OutputOverflow::kDrop &&
                       (full || (dropping_ && out_->size() > out_->capacity() / 2));
  if (full && !discard) return {Step::kBlocked, Side::kTarget};
  ssize_t n;
  if (discard) {
    if (discard_.empty()) discard_.resize(kBufferSize);
    n = ::read(source_.native_handle(), discard_.data(), discard_.size());
    if (n > 0) discarded(static_cast<std::uint64_t>(n));
  } else {
    n = out_->read_from(source_.native_handle());
    if (n < 0 && errno == ENOBUFS) {
      // The spill file could not grow: the buffer is full at a lower bound now.
      return overflow_ == OutputOverflow::kDrop ? Step{Step::kProgress}
                                                : Step{Step::kBlocked, Side::kTarget};
    }
  }
  if (n > 0) return {Step::kProgress};
  if (n == 0) return {Step::kEof};
  if (errno == EINTR) return {Step::kProgress};
  if (errno == EAGAIN) return {Step::kBlocked, Side::kSource};
  return {Step::kError, Side::kNone,
          shim::unknown(fmt::format("copy {}: read: {}", name_, std::strerror(errno)))};
}

void StreamCopier::discarded(std::uint64_t n) {
  bool first = !dropping_;
  if (first) {
    dropping_ = true;
    dropped_episode_ = 0;
  }
  dropped_episode_ += n;
  dropped_total_ += n;
  if (first && on_overflow_) {
    on_overflow_(
        OverflowEpisode{true, dropped_episode_, dropped_total_, out_->size(), out_->capacity()});
  }
}

void StreamCopier::end_episode() {
  dropping_ = false;
  if (on_overflow_) {
    on_overflow_(OverflowEpisode{false, dropped_episode_, dropped_total_, out_ ? out_->size() : 0,
                                 out_ ? out_->capacity() : 0});
  }
  dropped_episode_ = 0;
}

// Waits for the source to be readable and/or the target writable, whichever comes first.
// Each end was seen not ready in this turn (see blocked_side() on edge-triggered waits);
// a wait already pending on an end is left as it is.
void StreamCopier::wait_both(bool source, bool target) {
  auto handler = [self = shared_from_this()](bool* waiting) {
    return [self, waiting](const boost::system::error_code& ec) {
      *waiting = false;
      if (self->finished_) return;
      if (ec) {
        self->finish(shim::unknown(fmt::format("copy {}: wait: {}", self->name_, ec.message())));
        return;
      }
      self->pump();
    };
  };
  if (source && !source_waiting_) {
    source_waiting_ = true;
    source_.async_wait(boost::asio::posix::stream_descriptor::wait_read, handler(&source_waiting_));
  }
  if (target && !target_waiting_) {
    target_waiting_ = true;
    target_waiter_.async_wait(boost::asio::posix::stream_descriptor::wait_write,
                              handler(&target_waiting_));
  }
}

// The target is full and the buffer empty: the buffer takes over only once the target has
// taken no byte for a whole kBufferAfter. The target's wait pumps as usual when the reader
// takes bytes; the timer, when it fires, re-arms if bytes went out meanwhile.
void StreamCopier::wait_target_or_grace() {
  wait_both(false, true);
  if (full_timer_armed_) return;
  full_timer_armed_ = true;
  full_timer_.expires_after(kBufferAfter);
  full_timer_.async_wait(
      [self = shared_from_this(), bytes = bytes_](const boost::system::error_code& ec) {
        self->full_timer_armed_ = false;
        if (ec || self->finished_ || !self->target_waiting_) return;
        if (self->bytes_ != bytes) return self->wait_target_or_grace();  // reader alive
        self->reader_stalled_ = true;
        self->pump();
      });
}

void StreamCopier::finish(shim::Status status) {
  if (finished_) return;
  finished_ = true;
  if (dropping_) end_episode();
  release_fds();
  DoneHandler done = std::move(done_);
  done_ = nullptr;
  if (done) done(CopyResult{bytes_, std::move(status)});
}

void StreamCopier::release_fds() {
  boost::system::error_code ignored;
  source_.close(ignored);
  // The waiter only borrows the target fd: deregister it, then drop our share.
  if (target_waiter_.is_open()) target_waiter_.release();
  full_timer_.cancel();
  target_.reset();
  keeper_.reset();
  buffer_.clear();
  buffer_.shrink_to_fit();
  discard_.clear();
  discard_.shrink_to_fit();
  if (out_) {
    spilled_total_ = out_->spilled_bytes();
    out_.reset();  // frees the memory and closes (so removes) the spill file
  }
}

}  // namespace shim::stdio
