// The daemon's ShutdownControl: runs the shutdown sequence once (stop serving, in-flight
// replies go out, flush events, remove the socket, stop the loop), and for a shared shim
// (protocol/shim_sharing.h) lingers first once unused.
//
// Threading: request_shutdown() and ending() from any thread; the rest on the loop.
// attach() before the loop runs.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "events/event_forwarder.h"
#include "shim/logger.h"
#include "shim/shutdown_control.h"
#include "ttrpc/server.h"

namespace shim::detail {

class ShutdownSequence final : public ShutdownControl {
 public:
  ShutdownSequence(boost::asio::io_context& loop, Logger& logger);

  // How long the shim stays once unused; 0 (the default): it ends at once.
  void set_linger(std::chrono::milliseconds linger) { linger_ = linger; }
  // Whether the shim has decided to end (a Reserve then fails).
  bool ending() const { return door_closed_.load(); }

  // What the sequence stops. The socket file's identity is taken now: the sequence
  // removes only that file, never one a later shim bound at the same path (a shared
  // shim's, once this one ended).
  void attach(ttrpc::TtrpcServer* server, EventForwarder* forwarder, std::string socket_path);

  // The socket goes at once, so no Reserve is granted while the sequence waits in the
  // loop's queue.
  void request_shutdown() override;

 protected:
  // The socket goes at once, not in the posted sequence: a `start` that finds the shim
  // must not get a reservation from a shim that has decided to end. Each time the shim
  // becomes unused the linger starts again.
  void when_unused() override;

 private:
  void close_door();
  void begin();
  void flush();

  boost::asio::io_context& loop_;
  Logger& logger_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer linger_timer_;
  std::chrono::milliseconds linger_{0};
  ttrpc::TtrpcServer* server_ = nullptr;
  EventForwarder* forwarder_ = nullptr;
  std::string socket_path_;
  struct stat socket_file_ {};
  std::atomic<bool> attached_{false};
  std::atomic<bool> door_closed_{false};
  std::atomic<bool> unlinked_{false};
  bool started_ = false;
};

}  // namespace shim::detail
