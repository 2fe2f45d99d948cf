// StreamServer: the ttrpc server on given fds. A non-socket fd (a virtio-serial port) is
// relayed through a socket pair, since the server's connections are sockets.
#include "shim/ttrpc/stream_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/write.hpp>

#include "ttrpc/server.h"

namespace shim::ttrpc {

namespace asio = boost::asio;

namespace {

// Copies one direction, `from` to `to`, until either end fails; then closes both.
class Pump : public std::enable_shared_from_this<Pump> {
 public:
  Pump(std::shared_ptr<asio::posix::stream_descriptor> from,
       std::shared_ptr<asio::posix::stream_descriptor> to)
      : from_(std::move(from)), to_(std::move(to)) {}

  void start() { read(); }

 private:
  void read() {
    from_->async_read_some(
        asio::buffer(buffer_),
        [self = shared_from_this()](boost::system::error_code error, std::size_t size) {
          if (error) return self->stop();
          asio::async_write(*self->to_, asio::buffer(self->buffer_.data(), size),
                            [self](boost::system::error_code error, std::size_t) {
                              if (error) return self->stop();
                              self->read();
                            });
        });
  }
  void stop() {
    boost::system::error_code ignored;
    from_->close(ignored);
    to_->close(ignored);
  }

  std::shared_ptr<asio::posix::stream_descriptor> from_;
  std::shared_ptr<asio::posix::stream_descriptor> to_;
  std::array<char, 64 * 1024> buffer_;
};

bool is_socket(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

// The relays' descriptors, so that the server's end closes them.
class StreamServer::Relays {
 public:
  std::vector<std::weak_ptr<asio::posix::stream_descriptor>> ends;
};

StreamServer::StreamServer(asio::any_io_executor executor, Router router)
    : executor_(executor),
      server_(std::make_unique<TtrpcServer>(
          executor, std::move(router),
          ServerOptions{.require_same_user = false, .trim_memory = false})),
      relays_(std::make_shared<Relays>()) {}

StreamServer::~StreamServer() {
  server_->close();
  for (auto& end : relays_->ends) {
    if (auto e = end.lock()) {
      boost::system::error_code ignored;
      e->close(ignored);
    }
  }
}

Status StreamServer::serve(int fd) {
  if (is_socket(fd)) {
    server_->adopt_connection(fd, "", "");
    return {};
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
    Status error(Code::kInternal, fmt::format("ttrpc: socketpair: {}", std::strerror(errno)));
    ::close(fd);
    return error;
  }
  // The device's file status flags may be shared with other opens: Asio sets non-blocking
  // on its own descriptor (fd) only when it must.
  auto executor = executor_;
  auto device = std::make_shared<asio::posix::stream_descriptor>(executor, fd);
  auto relay_end = std::make_shared<asio::posix::stream_descriptor>(executor, pair[0]);
  relays_->ends.push_back(device);
  relays_->ends.push_back(relay_end);
  std::make_shared<Pump>(device, relay_end)->start();
  std::make_shared<Pump>(relay_end, device)->start();
  server_->adopt_connection(pair[1], "", "");
  return {};
}

std::size_t StreamServer::connection_count() const { return server_->connection_count(); }

}  // namespace shim::ttrpc
