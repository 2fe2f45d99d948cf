// The shared state behind Responder copies: who gets the reply, and whether the call has
// been completed. Completion is claimed once, from any thread, with an atomic flag.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim::ttrpc {

// Receives finished reply frames; implemented by the server connection. Must be
// thread-safe: replies come from any thread.
class CallSink {
 public:
  virtual void deliver(std::uint64_t call_id, std::string frame) = 0;

 protected:
  ~CallSink() = default;
};

namespace detail {

class CallState {
 public:
  CallState(std::weak_ptr<CallSink> sink, std::uint64_t call_id, std::uint32_t stream_id)
      : sink_(std::move(sink)), call_id_(call_id), stream_id_(stream_id) {}
  // Never completed: answer Internal so that the client does not hang.
  ~CallState();
  CallState(const CallState&) = delete;
  CallState& operator=(const CallState&) = delete;

  // Sends the reply if this is the first completion.
  void complete(const Status& status, std::string_view payload);
  // Takes the right to answer (the server does, when the deadline passes). False if
  // someone else already completed the call.
  bool claim() { return !done_.exchange(true, std::memory_order_acq_rel); }
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::weak_ptr<CallSink> sink_;
  std::uint64_t call_id_;
  std::uint32_t stream_id_;
  std::atomic<bool> done_{false};
};

}  // namespace detail
}  // namespace shim::ttrpc
