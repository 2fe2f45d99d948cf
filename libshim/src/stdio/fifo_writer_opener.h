// FifoWriterOpener: opens a client's output FIFO for writing once the client has a
// reader, without ever blocking the loop.
//
// An open(O_WRONLY) of a FIFO blocks until a reader exists; containerd's Go shim does that
// blocking open on a goroutine. Here the open is probed instead: O_WRONLY|O_NONBLOCK fails
// with ENXIO while there is no reader, and is retried with a short backoff (1 ms doubling
// up to 100 ms) until it succeeds or the opener is cancelled. The client's own open blocks
// until we are there (its reader is counted while it waits), so probing sees it at once.
//
// Nothing is copied before the client's reader exists: the bytes stay in the runtime's
// pipe, where they survive a late reader. Bytes pushed into a reader-less FIFO would be
// lost if the process ended first and the shim closed the FIFO at EOF.
//
// On success the handler also gets a second fd, the "keeper": our own O_RDONLY on the
// FIFO, held while writing so the FIFO never has zero readers (a client that goes away
// makes writes wait, not fail with EPIPE; a client that comes back, e.g. containerd after
// a restart, finds the bytes).
//
// Probes reopen the FIFO through an O_PATH fd taken at start (/proc/self/fd/N), so the
// FIFO the client named is the one opened even if its path is unlinked or replaced.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "shim/status.h"
#include "stdio/stdio_fd.h"

namespace shim::stdio {

struct OpenedFifo {
  Fd writer;  // O_WRONLY|O_NONBLOCK|O_CLOEXEC
  Fd keeper;  // O_RDONLY|O_NONBLOCK|O_CLOEXEC, never read
};

class FifoWriterOpener : public std::enable_shared_from_this<FifoWriterOpener> {
 public:
  using Handler = std::function<void(shim::Status status, OpenedFifo fifo)>;

  // `fifo_path_fd` is an O_PATH fd of the FIFO; `path` names it in errors. The first
  // probe runs on the loop soon after; `handler` runs on the loop once, with the open
  // FIFO or with an open error other than "no reader yet", never after cancel().
  static std::shared_ptr<FifoWriterOpener> start(boost::asio::any_io_executor executor,
                                                 Fd fifo_path_fd, std::string path,
                                                 Handler handler);

  void cancel();
  bool done() const { return done_; }
  // The FIFO's O_PATH fd while probing (-1 once done): a live upgrade carries it.
  int path_fd() const { return done_ ? -1 : path_fd_.get(); }

  // Public for make_shared; use start().
  FifoWriterOpener(boost::asio::any_io_executor executor, Fd fifo_path_fd, std::string path,
                   Handler handler);

 private:
  void probe();
  void retry_later();
  void finish(shim::Status status, OpenedFifo fifo);

  boost::asio::steady_timer timer_;
  Fd path_fd_;
  std::string path_;
  Handler handler_;
  std::chrono::milliseconds delay_{1};
  bool done_ = false;
};

}  // namespace shim::stdio
