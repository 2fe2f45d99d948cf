#include "stdio/fifo_delivery.h"

#include <sys/ioctl.h>

#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace shim::stdio {
namespace {

using Clock = std::chrono::steady_clock;

// One wait in progress; keeps itself alive through its timer's handler.
class ReadWait : public std::enable_shared_from_this<ReadWait> {
 public:
  ReadWait(boost::asio::any_io_executor executor, std::vector<Fd> readers, FifoReadWait wait,
           std::function<void(bool)> done)
      : timer_(std::move(executor)), readers_(std::move(readers)), wait_(wait),
        done_(std::move(done)), progress_at_(Clock::now()) {}

  void check() {
    std::size_t unread = 0;
    for (const Fd& reader : readers_) unread += unread_bytes(reader.get());
    const Clock::time_point now = Clock::now();
    if (unread == 0) return finish(true);
    if (unread != last_unread_) {
      last_unread_ = unread;
      progress_at_ = now;
    }
    if (now >= wait_.deadline || now - progress_at_ >= wait_.stall) return finish(false);
    timer_.expires_after(wait_.poll);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec) return self->finish(false);
      self->check();
    });
  }

 private:
  void finish(bool read) {
    readers_.clear();
    auto done = std::move(done_);
    done_ = nullptr;
    if (done) done(read);
  }

  boost::asio::steady_timer timer_;
  std::vector<Fd> readers_;
  FifoReadWait wait_;
  std::function<void(bool)> done_;
  std::size_t last_unread_ = 0;
  Clock::time_point progress_at_;
};

}  // namespace

std::size_t unread_bytes(int fd) {
  int unread = 0;
  if (fd < 0 || ::ioctl(fd, FIONREAD, &unread) != 0 || unread < 0) return 0;
  return static_cast<std::size_t>(unread);
}

void wait_until_read(boost::asio::any_io_executor executor, std::vector<Fd> readers,
                     FifoReadWait wait, std::function<void(bool read)> done) {
  auto state = std::make_shared<ReadWait>(executor, std::move(readers), wait, std::move(done));
  boost::asio::post(executor, [state] { state->check(); });
}

}  // namespace shim::stdio
