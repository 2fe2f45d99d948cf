// FifoReaders: read ends of a process's stdout/stderr FIFOs that the shim holds (and
// never reads) while the process exists.
//
// ctr opens its own read ends asynchronously, so a fast process may write before any
// reader exists: without a held reader that write raises SIGPIPE (exit 141) and the
// output is lost. With one, the bytes wait in the FIFO until ctr reads them, even after
// the process has exited. A read end is no writer, so ctr still sees EOF when the
// process exits.
#pragma once

#include <unistd.h>

#include <utility>
#include <vector>

namespace example {

class FifoReaders {
 public:
  FifoReaders() = default;
  ~FifoReaders() { close_all(); }
  FifoReaders(FifoReaders&& other) noexcept : fds_(std::exchange(other.fds_, {})) {}
  FifoReaders& operator=(FifoReaders&& other) noexcept {
    if (this != &other) {
      close_all();
      fds_ = std::exchange(other.fds_, {});
    }
    return *this;
  }
  FifoReaders(const FifoReaders&) = delete;
  FifoReaders& operator=(const FifoReaders&) = delete;

  void hold(int fd) { fds_.push_back(fd); }
  void close_all() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }

 private:
  std::vector<int> fds_;
};

}  // namespace example
