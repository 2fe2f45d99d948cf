#include "stdio/fifo_writer_opener.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

namespace shim::stdio {

namespace {

constexpr std::chrono::milliseconds kMaxDelay{100};

std::string proc_fd_path(int fd) { return fmt::format("/proc/self/fd/{}", fd); }

}  // namespace

std::shared_ptr<FifoWriterOpener> FifoWriterOpener::start(boost::asio::any_io_executor executor,
                                                          Fd fifo_path_fd, std::string path,
                                                          Handler handler) {
  auto opener = std::make_shared<FifoWriterOpener>(executor, std::move(fifo_path_fd),
                                                   std::move(path), std::move(handler));
  boost::asio::post(executor, [opener] {
    if (!opener->done_) opener->probe();
  });
  return opener;
}

FifoWriterOpener::FifoWriterOpener(boost::asio::any_io_executor executor, Fd fifo_path_fd,
                                   std::string path, Handler handler)
    : timer_(std::move(executor)),
      path_fd_(std::move(fifo_path_fd)),
      path_(std::move(path)),
      handler_(std::move(handler)) {}

void FifoWriterOpener::cancel() {
  if (done_) return;
  done_ = true;
  timer_.cancel();
  path_fd_.reset();
  handler_ = nullptr;
}

void FifoWriterOpener::probe() {
  std::string reopen = proc_fd_path(path_fd_.get());
  Fd writer(::open(reopen.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!writer.valid()) {
    if (errno == ENXIO) {
      retry_later();
      return;
    }
    finish(errno_status(fmt::format("open fifo {} for writing", path_)), {});
    return;
  }
  // The client's reader is there now; ours keeps the FIFO from ever having none. It
  // cannot block: O_NONBLOCK readers open at once.
  Fd keeper(::open(reopen.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!keeper.valid()) {
    finish(errno_status(fmt::format("open fifo {} for reading", path_)), {});
    return;
  }
  finish({}, OpenedFifo{std::move(writer), std::move(keeper)});
}

void FifoWriterOpener::retry_later() {
  timer_.expires_after(delay_);
  delay_ = std::min(delay_ * 2, kMaxDelay);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->done_) return;
    self->probe();
  });
}

void FifoWriterOpener::finish(shim::Status status, OpenedFifo fifo) {
  done_ = true;
  path_fd_.reset();
  Handler handler = std::move(handler_);
  handler_ = nullptr;
  if (handler) handler(std::move(status), std::move(fifo));
}

}  // namespace shim::stdio
