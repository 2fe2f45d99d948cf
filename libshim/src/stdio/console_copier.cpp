#include "stdio/console_copier.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

namespace shim::stdio {

namespace {

// Steps per turn on the loop before yielding to the other work sharing it.
constexpr int kStepsPerTurn = 64;
// After the process exit, how long the output copy still waits for the master's EOF
// before "nothing to read" ends it (bytes the slave wrote last may still be in flight).
constexpr std::chrono::milliseconds kDrainGrace{100};

}  // namespace

ConsoleCopier::ConsoleCopier(boost::asio::any_io_executor executor)
    : executor_(executor),
      master_(executor),
      input_source_(executor),
      output_waiter_(executor),
      drain_timer_(executor) {
  input_.name = "console stdin";
  output_.name = "console stdout";
}

shim::Status ConsoleCopier::create(boost::asio::any_io_executor executor, Fd master,
                                   std::shared_ptr<ConsoleCopier>* copier) {
  if (shim::Status status = set_nonblocking(master.get()); !status.ok()) return status;
  auto made = std::make_shared<ConsoleCopier>(std::move(executor));
  boost::system::error_code ec;
  made->master_.assign(master.get(), ec);
  if (ec) return shim::unknown(fmt::format("register console master: {}", ec.message()));
  master.release();
  *copier = std::move(made);
  return {};
}

void ConsoleCopier::start_input(Fd input, DoneHandler done) {
  if (cancelled_ || input_.done || !master_.is_open()) return;
  boost::system::error_code ec;
  input_source_.assign(input.get(), ec);
  if (ec) {
    boost::asio::post(executor_, [done, ec] {
      done(CopyResult{0, shim::unknown(fmt::format("register stdin: {}", ec.message()))});
    });
    return;
  }
  input.release();
  input_.source = &input_source_;
  input_.target_waiter = &master_;
  input_.target_fd = master_.native_handle();
  input_.active = true;
  input_.done = std::move(done);
  boost::asio::post(executor_, [self = shared_from_this()] { self->pump(self->input_); });
}

void ConsoleCopier::start_output(CopyTarget target, DoneHandler done) {
  if (cancelled_ || output_.done) return;
  output_.done = std::move(done);
  if (!master_.is_open()) {
    // Hung up before the output could start: nothing more will come.
    boost::asio::post(executor_, [self = shared_from_this()] { self->finish(self->output_, {}); });
    output_.active = true;
    return;
  }
  attach_output(std::move(target.fd), std::move(target.keeper));
  output_.active = true;
  boost::asio::post(executor_, [self = shared_from_this()] { self->pump(self->output_); });
}

void ConsoleCopier::attach_output(std::shared_ptr<Fd> target, Fd keeper) {
  output_target_ = std::move(target);
  output_keeper_ = std::move(keeper);
  output_.source = &master_;
  output_.source_is_master = true;
  if (output_target_ && output_target_->valid()) {
    output_.target_fd = output_target_->get();
    struct stat st {};
    bool pollable = ::fstat(output_.target_fd, &st) == 0 &&
                    (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode));
    if (pollable) {
      boost::system::error_code ec;
      output_waiter_.assign(output_.target_fd, ec);
      if (!ec) output_.target_waiter = &output_waiter_;
    }
  }
}

void ConsoleCopier::pump(Leg& leg) {
  for (int steps = 0; steps < kStepsPerTurn; ++steps) {
    if (!leg.active) return;
    shim::Status error;
    Step next = step(leg, &error);
    switch (next) {
      case Step::kProgress:
        continue;
      case Step::kEof:
        finish(leg, {});
        return;
      case Step::kError:
        finish(leg, std::move(error));
        return;
      case Step::kWaitSource:
      case Step::kWaitTarget:
        wait(leg, next);
        return;
    }
  }
  boost::asio::post(executor_, [self = shared_from_this(), leg = &leg] { self->pump(*leg); });
}

ConsoleCopier::Step ConsoleCopier::step(Leg& leg, shim::Status* error) {
  if (leg.buffer.empty()) leg.buffer.resize(kBufferSize);
  if (leg.begin < leg.end) {
    if (leg.target_fd < 0) {  // no target: drop the bytes
      leg.bytes += leg.end - leg.begin;
      leg.begin = leg.end;
      return Step::kProgress;
    }
    ssize_t n = ::write(leg.target_fd, leg.buffer.data() + leg.begin, leg.end - leg.begin);
    if (n > 0) {
      leg.begin += static_cast<std::size_t>(n);
      leg.bytes += static_cast<std::uint64_t>(n);
      return Step::kProgress;
    }
    if (n < 0 && errno == EINTR) return Step::kProgress;
    if (n < 0 && errno == EAGAIN && leg.target_waiter != nullptr) return Step::kWaitTarget;
    *error = shim::unknown(
        fmt::format("copy {}: write: {}", leg.name, std::strerror(n < 0 ? errno : EIO)));
    return Step::kError;
  }
  ssize_t n = ::read(leg.source->native_handle(), leg.buffer.data(), leg.buffer.size());
  if (n > 0) {
    leg.begin = 0;
    leg.end = static_cast<std::size_t>(n);
    return Step::kProgress;
  }
  if (n == 0) return Step::kEof;
  if (errno == EINTR) return Step::kProgress;
  if (errno == EIO && leg.source_is_master) return Step::kEof;  // every slave fd is closed
  if (errno == EAGAIN) return leg.end_when_idle ? Step::kEof : Step::kWaitSource;
  *error = shim::unknown(fmt::format("copy {}: read: {}", leg.name, std::strerror(errno)));
  return Step::kError;
}

// Only ever after EAGAIN on that end: the loop's epoll is edge-triggered. Each end has
// at most one wait pending; a wakeup that finds nothing to do just waits again.
void ConsoleCopier::wait(Leg& leg, Step blocked) {
  bool on_source = blocked == Step::kWaitSource;
  bool& waiting = on_source ? leg.waiting_source : leg.waiting_target;
  if (waiting) return;
  waiting = true;
  auto on_ready = [self = shared_from_this(), leg = &leg,
                   on_source](const boost::system::error_code& ec) {
    (on_source ? leg->waiting_source : leg->waiting_target) = false;
    if (!leg->active) return;
    if (ec) {
      self->finish(*leg, shim::unknown(fmt::format("copy {}: wait: {}", leg->name, ec.message())));
      return;
    }
    self->pump(*leg);
  };
  if (on_source) {
    leg.source->async_wait(boost::asio::posix::stream_descriptor::wait_read, std::move(on_ready));
  } else {
    leg.target_waiter->async_wait(boost::asio::posix::stream_descriptor::wait_write,
                                  std::move(on_ready));
  }
}

void ConsoleCopier::finish(Leg& leg, shim::Status status) {
  if (!leg.active) return;
  leg.active = false;
  leg.buffer.clear();
  leg.buffer.shrink_to_fit();
  boost::system::error_code ignored;
  if (&leg == &input_) {
    input_source_.close(ignored);
  } else {
    if (output_waiter_.is_open()) output_waiter_.release();
    output_target_.reset();
    output_keeper_.reset();
    if (close_master_after_output_) close_master();
  }
  DoneHandler done = std::move(leg.done);
  leg.done = [](const CopyResult&) {};  // marks the leg as used
  done(CopyResult{leg.bytes, std::move(status)});
}

void ConsoleCopier::stop_input() {
  if (!input_.active) return;
  input_.active = false;
  boost::system::error_code ignored;
  input_source_.close(ignored);  // a pending wait ends with operation_aborted
}

void ConsoleCopier::kick_output() {
  if (!output_.active) return;
  boost::asio::post(executor_, [self = shared_from_this()] { self->pump(self->output_); });
}

void ConsoleCopier::drain() {
  if (cancelled_) return;
  stop_input();
  drain_timer_.expires_after(kDrainGrace);
  drain_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->cancelled_) return;
    self->output_.end_when_idle = true;
    self->kick_output();
  });
}

void ConsoleCopier::hang_up() {
  if (cancelled_) return;
  stop_input();
  output_.end_when_idle = true;
  close_master_after_output_ = true;
  if (output_.active) {
    kick_output();
  } else if (output_.done) {
    close_master();  // the output already ended
  }
  // Output not started yet: the master closes once it has been drained.
}

void ConsoleCopier::close_master() {
  boost::system::error_code ignored;
  drain_timer_.cancel();
  master_.close(ignored);
}

shim::Status ConsoleCopier::resize(std::uint16_t width, std::uint16_t height) {
  if (!master_.is_open()) return {};
  winsize size{};
  size.ws_row = height;
  size.ws_col = width;
  if (::ioctl(master_.native_handle(), TIOCSWINSZ, &size) < 0) {
    return shim::unknown(fmt::format("resize console: {}", std::strerror(errno)));
  }
  return {};
}

void ConsoleCopier::cancel() {
  if (cancelled_) return;
  cancelled_ = true;
  input_.active = false;
  output_.active = false;
  input_.done = nullptr;
  output_.done = nullptr;
  boost::system::error_code ignored;
  input_source_.close(ignored);
  if (output_waiter_.is_open()) output_waiter_.release();
  output_target_.reset();
  output_keeper_.reset();
  close_master();
}

}  // namespace shim::stdio
