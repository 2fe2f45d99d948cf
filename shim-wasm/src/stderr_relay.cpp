#include "stderr_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace shim_wasm {
namespace {

// Owns itself through the pending read; gone at EOF or an error.
class Relay : public std::enable_shared_from_this<Relay> {
 public:
  Relay(const boost::asio::any_io_executor& executor, int read_end) : pipe_(executor, read_end) {}

  void read() {
    pipe_.async_read_some(
        boost::asio::buffer(buffer_),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (ec) return;  // EOF: the helper and its copies are gone
          self->copy(n);
          self->read();
        });
  }

 private:
  // The shim's stderr is a non-blocking FIFO: what does not fit now is dropped, as the
  // shim's own logger drops it, rather than stall the event loop.
  void copy(std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      ssize_t w = ::write(STDERR_FILENO, buffer_.data() + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      done += static_cast<std::size_t>(w);
    }
  }

  boost::asio::posix::stream_descriptor pipe_;
  std::array<char, 4096> buffer_{};
};

}  // namespace

shim::Status start_stderr_relay(const boost::asio::any_io_executor& executor,
                                shim::UniqueFd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return shim::Status(
        shim::Code::kUnknown,
        fmt::format("wasm: a pipe for the zygote's stderr: {}", std::strerror(errno)));
  }
  *write_end = shim::UniqueFd(fds[1]);
  auto relay = std::make_shared<Relay>(executor, fds[0]);
  relay->read();
  return {};
}

}  // namespace shim_wasm
