// ExitFuture / ExitPromise: hands one process's exit from the reaper to the code that
// started the process (e.g. the plug-in waiting for `runc create`).
//
// The promise side is used by Reaper implementations (fakes included); the future side
// offers a blocking wait for pool threads and an async wait for the event loop. If the
// producer gives up (reaper stopped, promise destroyed unset) waiters get std::nullopt.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/any_io_executor.hpp>

#include "shim/process/exit.h"

namespace shim {

namespace detail {
struct ExitState;
}

// Receives an exit, or std::nullopt when the producer gave up.
using ExitWaitCallback = std::function<void(const std::optional<ProcessExit>&)>;

// The waiting side: copyable, shares the state with its ExitPromise.
class ExitFuture {
 public:
  ExitFuture() = default;

  // Whether it belongs to a promise (a default-constructed future does not).
  bool valid() const { return state_ != nullptr; }
  // The exit is known, or the producer gave up.
  bool ready() const;

  // Blocks until the exit is known; std::nullopt if the producer gave up. For pool
  // threads only: on the loop thread that delivers exits it would wait forever.
  std::optional<ProcessExit> wait() const;
  // As wait(), bounded; std::nullopt on timeout too (ready() tells which).
  std::optional<ProcessExit> wait_for(std::chrono::milliseconds timeout) const;

  // Runs `callback` once on `executor` with the exit (or std::nullopt, see above). It is
  // always posted, never run inline, also when the exit is already known.
  void async_wait(boost::asio::any_io_executor executor, ExitWaitCallback callback) const;

 private:
  friend class ExitPromise;
  explicit ExitFuture(std::shared_ptr<detail::ExitState> state) : state_(std::move(state)) {}

  std::shared_ptr<detail::ExitState> state_;
};

// The producing side: set once by the reaper when the process exits.
class ExitPromise {
 public:
  ExitPromise();
  ~ExitPromise();  // abandons a promise that was never set
  ExitPromise(ExitPromise&&) noexcept = default;  // moves the state; the source is left empty
  ExitPromise& operator=(ExitPromise&& other) noexcept;  // abandons this one's state first
  ExitPromise(const ExitPromise&) = delete;
  ExitPromise& operator=(const ExitPromise&) = delete;

  // A future on this promise's state (any number of them).
  ExitFuture future() const { return ExitFuture(state_); }

  // The first of set() / abandon() wins; later calls do nothing.
  void set(const ProcessExit& exit);
  void abandon();

 private:
  void complete(const std::optional<ProcessExit>& exit);

  std::shared_ptr<detail::ExitState> state_;
};

}  // namespace shim
