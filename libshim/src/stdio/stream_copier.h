// StreamCopier: moves bytes from one fd to another on the event loop until EOF.
//
// The source is a pipe or FIFO in non-blocking mode. The target is a pipe/FIFO (waited on
// for writability, never dropped from) or a plain file (written directly: regular files
// never report "would block"). Pipe to pipe goes through splice(2), so the kernel moves
// page references instead of copying bytes through user space; anything splice refuses
// falls back to read/write with one buffer. A copy ends only at EOF on the source, i.e.
// once every writer (the process and any child still holding the pipe) is gone, so the
// last bytes of a process that exits at once are never lost.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shim/logger.h"
#include "shim/status.h"
#include "shim/stdio/process_io.h"  // CopyMethod
#include "stdio/stdio_fd.h"

namespace shim::stdio {

// Where a copy writes. `fd` is shared when stdout and stderr go to one file (closed once
// both copies let go of it). `keeper` is closed together with the target: the FIFO reader
// the shim holds so that the FIFO never has zero readers while it writes.
struct CopyTarget {
  std::shared_ptr<Fd> fd;
  Fd keeper;
};

struct CopyResult {
  std::uint64_t bytes = 0;
  shim::Status status;  // OK at EOF, else what stopped the copy (e.g. EPIPE)
};

class StreamCopier : public std::enable_shared_from_this<StreamCopier> {
 public:
  using DoneHandler = std::function<void(const CopyResult&)>;

  // Starts copying at once. `name` ("stdout", ...) is used in errors and logs. `done` runs
  // on the loop when the copy ends by itself (EOF or error), never after cancel().
  static std::shared_ptr<StreamCopier> start(boost::asio::any_io_executor executor,
                                             std::string name, Fd source, CopyTarget target,
                                             CopyMethod method, DoneHandler done);

  // Stops the copy and closes its fds now. Idempotent. Call on the loop.
  void cancel();

  bool finished() const { return finished_; }
  std::uint64_t bytes() const { return bytes_; }
  // Whether bytes currently go through splice (false after a fallback).
  bool splicing() const { return method_ == CopyMethod::kSplice; }

  // Public for make_shared; use start().
  StreamCopier(boost::asio::any_io_executor executor, std::string name, CopyMethod method,
               DoneHandler done);

 private:
  enum class Side { kNone, kSource, kTarget };
  struct Step;

  shim::Status attach(Fd source, CopyTarget target);
  void pump();
  Step splice_once();
  Step read_write_once();
  Side blocked_side();
  void wait(Side side);
  void finish(shim::Status status);
  void release_fds();

  boost::asio::any_io_executor executor_;
  std::string name_;
  CopyMethod method_;
  DoneHandler done_;
  boost::asio::posix::stream_descriptor source_;
  boost::asio::posix::stream_descriptor target_waiter_;  // registered only for pipe targets
  std::shared_ptr<Fd> target_;
  Fd keeper_;
  bool target_pollable_ = false;
  bool finished_ = false;
  int fruitless_probes_ = 0;
  std::uint64_t bytes_ = 0;
  std::vector<char> buffer_;  // read/write mode only
  std::size_t pending_begin_ = 0;
  std::size_t pending_end_ = 0;
};

}  // namespace shim::stdio
