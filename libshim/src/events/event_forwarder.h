// EventForwarder: the Publisher that forwards events to containerd over ttrpc
// (containerd.services.events.ttrpc.v1.Events/Forward on TTRPC_ADDRESS).
//
// One ordered outbox, one call in flight: an event is removed only once containerd has
// accepted it, so events are never reordered. While containerd is down (restarting) the
// forwarder reconnects with exponential backoff and keeps everything queued, up to a bound
// (count and bytes). Nothing is dropped silently: an event containerd rejects (e.g. an
// invalid topic) or one dropped at the bound is logged with its topic.
//
// At the bound the incoming event is dropped, except a /tasks/exit: for it the oldest
// queued event that is not an exit (and not the one in flight) is dropped instead. An exit
// is the one thing containerd cannot learn again (State and Wait answer only while the
// shim lives); a lost /tasks/start or /tasks/exec-added only delays a listener. Order is
// kept either way.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "shim/clock.h"
#include "shim/events/publisher.h"
#include "shim/logger.h"

namespace shim {

struct EventForwarderOptions {
  std::string ttrpc_address;  // "/run/containerd/containerd.sock.ttrpc" or unix://...
  std::string ns;             // envelope namespace and containerd-namespace-ttrpc metadata
  std::chrono::milliseconds call_timeout{5000};
  std::chrono::milliseconds min_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  std::size_t max_queued = 65536;            // events
  std::size_t max_queued_bytes = 16u << 20;  // serialized ForwardRequests
};

struct EventForwarderStats {
  std::size_t queued = 0;
  std::size_t sent = 0;
  std::size_t rejected = 0;    // containerd answered an error status; not retried
  std::size_t overflowed = 0;  // dropped at the bound (logged)
  std::size_t queued_bytes = 0;
  std::size_t reconnects = 0;
};

class EventForwarder final : public Publisher {
 public:
  EventForwarder(boost::asio::any_io_executor executor, EventForwarderOptions options,
                 const Clock& clock, Logger& logger);
  // Closes (see close()): flush() first to deliver what is queued.
  ~EventForwarder() override;

  void publish(std::string_view topic, const google::protobuf::MessageLite& event) override;

  // Calls `done` (on the executor) once the outbox is empty or `timeout` passed, whichever
  // comes first; `done(true)` means everything was delivered. Each call has its own
  // timeout; close() completes pending flushes with false.
  void flush(std::chrono::milliseconds timeout, std::function<void(bool)> done);
  // Stops sending and drops the connection; queued events are logged as lost.
  void close();

  EventForwarderStats stats() const;

  // Live upgrade (docs/live-upgrade.md), on the executor. hold() starts no new Forward
  // call until release(); idle() says none is in flight (so none can be answered after
  // the exec and sent again); queued() is what waits, oldest first, as (topic,
  // serialized ForwardRequest); the new program requeue()s it before anything else.
  void hold();
  void release();
  bool idle() const;
  std::vector<std::pair<std::string, std::string>> queued() const;
  void requeue(std::vector<std::pair<std::string, std::string>> events);

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace shim
