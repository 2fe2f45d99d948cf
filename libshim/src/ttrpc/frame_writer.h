// A per-connection write queue: frames queued while a write is running go out together
// in the next gathered write, so callers never wait for the socket.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>

namespace shim::ttrpc {

class FrameWriter {
 public:
  // Queues a frame; true if the owner must start a write (none is running).
  bool push(std::string frame) {
    pending_bytes_ += frame.size();
    queued_.push_back(std::move(frame));
    return !writing_;
  }

  // Moves the queue into the in-flight batch and returns its buffers, which stay valid
  // until finish(). Empty if there is nothing to write.
  std::span<const boost::asio::const_buffer> start() {
    if (writing_ || queued_.empty()) return {};
    writing_ = true;
    in_flight_.swap(queued_);
    buffers_.clear();
    for (const auto& frame : in_flight_) buffers_.emplace_back(frame.data(), frame.size());
    return buffers_;
  }

  // The batch went out (or failed); true if more frames are waiting.
  bool finish() {
    writing_ = false;
    for (const auto& frame : in_flight_) pending_bytes_ -= frame.size();
    in_flight_.clear();
    return !queued_.empty();
  }

  // Drops queued frames (the in-flight batch stays valid until finish()).
  void drop_queued() {
    for (const auto& frame : queued_) pending_bytes_ -= frame.size();
    queued_.clear();
  }

  bool idle() const { return !writing_ && queued_.empty(); }
  // Bytes queued or being written: what a peer that does not read makes us hold.
  std::size_t pending_bytes() const { return pending_bytes_; }

 private:
  std::vector<std::string> queued_;
  std::vector<std::string> in_flight_;
  std::vector<boost::asio::const_buffer> buffers_;
  std::size_t pending_bytes_ = 0;
  bool writing_ = false;
};

}  // namespace shim::ttrpc
