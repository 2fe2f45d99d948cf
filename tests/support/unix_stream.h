// A blocking AF_UNIX client socket for tests that speak raw bytes to a server.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace shim::test {

class UnixStream {
 public:
  // Connects to `path`; throws std::runtime_error on failure.
  explicit UnixStream(const std::string& path);
  // Adopts a connected socket fd.
  explicit UnixStream(int fd) : fd_(fd) {}
  ~UnixStream();
  UnixStream(const UnixStream&) = delete;
  UnixStream& operator=(const UnixStream&) = delete;

  // False if the peer is gone.
  bool write_all(std::string_view bytes);
  // Exactly `size` bytes, or nullopt on EOF, error or timeout.
  std::optional<std::string> read_exact(std::size_t size,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // True if the peer closed (EOF or reset) within `timeout`; any data read is discarded.
  bool wait_closed(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  void shutdown_write();
  void close();
  int fd() const { return fd_; }

 private:
  bool wait_readable(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
};

// A blocking listening socket, for tests that play the server side by hand.
class UnixStreamListener {
 public:
  // Binds and listens on `path`; throws std::runtime_error on failure.
  explicit UnixStreamListener(const std::string& path);
  ~UnixStreamListener();
  UnixStreamListener(const UnixStreamListener&) = delete;
  UnixStreamListener& operator=(const UnixStreamListener&) = delete;

  // The next connection, or nullptr after `timeout`.
  std::unique_ptr<UnixStream> accept(std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  int fd_ = -1;
};

}  // namespace shim::test
