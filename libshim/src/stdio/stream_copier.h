// StreamCopier: moves bytes from one fd to another on the event loop until EOF.
//
// The source is a pipe or FIFO in non-blocking mode. The target is a pipe/FIFO (waited on
// for writability, never dropped from) or a plain file (written directly: regular files
// never report "would block"). Pipe to pipe goes through splice(2), so the kernel moves
// page references instead of copying bytes through user space; anything splice refuses
// falls back to read/write with one buffer. A copy ends only at EOF on the source, i.e.
// once every writer (the process and any child still holding the pipe) is gone, so the
// last bytes of a process that exits at once are never lost.
//
// Buffered copies (output FIFOs, CopyBuffering): once the target has taken nothing for
// kBufferAfter (its reader is away, or stalled) the copy goes on reading the source into an
// OutputBuffer (memory, then a spill file) and writes that out first, in order, once the
// target takes bytes again; only while the buffer is empty do bytes go source -> target
// directly (splice). A reader that keeps taking bytes, however slowly, paces the writer as a
// pipe does: buffering it would cost two copies per byte for nothing the reader gains. At the
// buffer's bound the overflow policy decides: kBlock stops reading the source (the writer blocks,
// nothing is lost), kDrop reads and discards, counted, in episodes: one starts when a read is
// discarded and ends when the buffer is back at half its bound (so a slow reader does not make an
// episode per pipe's worth), each reported through on_overflow.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shim/logger.h"
#include "shim/status.h"
#include "shim/stdio/process_io.h"  // CopyMethod
#include "stdio/output_buffer.h"
#include "stdio/stdio_fd.h"

namespace shim::upgrade {
class CarriedFds;
}  // namespace shim::upgrade

namespace shim::stdio {

// Where a copy writes. `fd` is shared when stdout and stderr go to one file (closed once
// both copies let go of it). `keeper` is closed together with the target: the FIFO reader
// the shim holds so that the FIFO never has zero readers while it writes.
struct CopyTarget {
  std::shared_ptr<Fd> fd;
  Fd keeper;
};

// A drop episode of a buffered copy (see the file comment): `started` when the first read
// was discarded, else it ended (the buffer has room again, or the copy ended).
struct OverflowEpisode {
  bool started = false;
  std::uint64_t dropped = 0;        // bytes discarded in this episode so far
  std::uint64_t dropped_total = 0;  // bytes discarded by this copy so far
  std::uint64_t buffered = 0;       // bytes held now
  std::uint64_t capacity = 0;       // the buffer's bound now
};

struct CopyBuffering {
  OutputBufferOptions options;
  std::function<void(const OverflowEpisode&)> on_overflow;  // may be empty
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
                                             CopyMethod method, DoneHandler done,
                                             std::optional<CopyBuffering> buffering = {});

  // Live upgrade (stdio/stdio_upgrade.cpp). save_for_upgrade(): the copy's progress (the
  // bytes in hand, its buffer, counters) and its fds (source, target, keeper: also into
  // *fds) into *state; whatever it makes for the save goes into *made. Call on the loop,
  // between two of its steps (any time on the loop is); the copy itself is not changed.
  // resume(): in the new program, the copy that save_for_upgrade() described, given its
  // fds again (the caller opens them from the saved numbers: a target may be shared) and
  // its `done`/`on_overflow`; it goes on once the loop runs. Errors name the field that is
  // wrong; on error the fds given are closed (duplicates: see upgrade/carried_fds.h).
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds,
                                std::vector<Fd>* made);
  static shim::Status resume(boost::asio::any_io_executor executor, std::string name,
                             const boost::json::value& saved, Fd source, CopyTarget target,
                             DoneHandler done,
                             std::function<void(const OverflowEpisode&)> on_overflow,
                             upgrade::CarriedFds* carried, std::shared_ptr<StreamCopier>* copier);
  // The fds of a saved copy, as save_for_upgrade() numbered them (-1: none).
  struct SavedFds {
    int source = -1;
    int target = -1;
    int keeper = -1;
  };
  static shim::Status saved_fds(const boost::json::value& saved, const std::string& where,
                                SavedFds* fds);

  // Stops the copy and closes its fds now. Idempotent. Call on the loop.
  void cancel();

  bool finished() const { return finished_; }
  // Bytes written to the target.
  std::uint64_t bytes() const { return bytes_; }
  // Buffered copies: bytes held now, discarded so far, and the buffer (null otherwise).
  std::uint64_t buffered() const { return out_ ? out_->size() : 0; }
  std::uint64_t dropped() const { return dropped_total_; }
  // Bytes that went through the spill file so far (kept after the copy ended).
  std::uint64_t spilled() const { return out_ ? out_->spilled_bytes() : spilled_total_; }
  const OutputBuffer* buffer() const { return out_.get(); }
  // Whether bytes currently go through splice (false after a fallback).
  bool splicing() const { return method_ == CopyMethod::kSplice; }

  // Public for make_shared; use start().
  StreamCopier(boost::asio::any_io_executor executor, std::string name, CopyMethod method,
               DoneHandler done);

 private:
  // Read/write buffer: a whole default pipe in one go.
  static constexpr std::size_t kBufferSize = 64 * 1024;

  enum class Side { kNone, kSource, kTarget };
  struct Step;

  shim::Status attach(Fd source, CopyTarget target);
  void pump();
  void pump_buffered();
  Step deliver_once();
  Step take_once();
  void discarded(std::uint64_t n);
  void end_episode();
  void wait_both(bool source, bool target);
  void wait_target_or_grace();
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
  // Buffered copies only.
  std::unique_ptr<OutputBuffer> out_;
  std::function<void(const OverflowEpisode&)> on_overflow_;
  OutputOverflow overflow_ = OutputOverflow::kBlock;
  bool source_eof_ = false;
  bool source_waiting_ = false;
  bool target_waiting_ = false;
  // The target was seen full with the buffer empty: kBufferAfter runs on this timer, and
  // once it fires the buffer takes the source's bytes until it is empty again.
  boost::asio::steady_timer full_timer_;
  bool full_timer_armed_ = false;
  bool reader_stalled_ = false;
  bool dropping_ = false;
  std::uint64_t dropped_total_ = 0;
  std::uint64_t dropped_episode_ = 0;
  std::uint64_t spilled_total_ = 0;
  std::vector<char> discard_;
};

}  // namespace shim::stdio
