// ServiceContext: everything the long-lived shim server hands a plug-in (its Runtime or
// TaskService). Nothing here is global: tests build a ServiceContext from fakes.
//
// Threading: `executor` is the one event loop; the Reaper delivers exits there and the
// Publisher may be called from any thread. `pool` runs blocking work. The Logger and the
// Spawner are thread-safe; ShutdownControl may be called from any thread.
#pragma once

#include <string>

#include <boost/asio/any_io_executor.hpp>

namespace shim {

class Clock;
class Logger;
class Publisher;
class Reaper;
class Spawner;
class WorkPool;

// Who this shim is, as containerd told it.
struct ShimIdentity {
  std::string ns;             // -namespace
  std::string id;             // the task id the daemon was started for (or its group id)
  std::string bundle;         // the daemon's cwd: the first task's bundle
  std::string grpc_address;   // containerd's gRPC socket (-address)
  std::string ttrpc_address;  // TTRPC_ADDRESS: where events go
  bool debug = false;         // -debug
};

// Lets a service end the shim: stop accepting, finish in-flight replies, flush events,
// remove the socket, exit 0. Safe to call from any thread, more than once.
class ShutdownControl {
 public:
  virtual ~ShutdownControl() = default;
  // Asks the shim to shut down (see above); returns at once.
  virtual void request_shutdown() = 0;
};

// What the daemon hands a plug-in. Every reference outlives the plug-in.
struct ServiceContext {
  boost::asio::any_io_executor executor;  // the one event loop
  Reaper& reaper;                         // collects every child; see shim/process/reaper.h
  Publisher& publisher;                   // task events to containerd, in order
  const Clock& clock;                     // the time for events and logs
  Spawner& spawner;                       // starts processes (fds closed, namespaces, hold)
  WorkPool& pool;                         // small bounded pool for blocking runtime calls
  Logger& logger;                         // the shim's log (containerd's log via the `log` FIFO)
  ShutdownControl& shutdown;              // ends the shim
  ShimIdentity identity;                  // who this shim is
};

}  // namespace shim
