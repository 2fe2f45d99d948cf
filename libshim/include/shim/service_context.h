// ServiceContext: everything the long-lived shim server hands a plug-in (its Runtime or
// TaskService). Nothing here is global: tests build a ServiceContext from fakes.
//
// Threading: `executor` is the one event loop; the Reaper delivers exits there and the
// Publisher may be called from any thread. `pool` runs blocking work. The Logger and the
// Spawner are thread-safe; ShutdownControl::request_shutdown may be called from any
// thread, its keepers are set and asked on the loop (shim/shutdown_control.h).
#pragma once

#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "shim/shutdown_control.h"
#include "shim/stdio/process_io.h"

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

// What the daemon hands a plug-in. Every reference outlives the plug-in.
struct ServiceContext {
  boost::asio::any_io_executor executor;  // the one event loop
  Reaper& reaper;                         // collects every child; see shim/process/reaper.h
  Publisher& publisher;                   // task events to containerd, in order
  const Clock& clock;                     // the time for events and logs
  Spawner& spawner;                       // starts processes (fds closed, namespaces, hold)
  WorkPool& pool;                         // small bounded pool for blocking runtime calls
  Logger& logger;                         // the shim's log (containerd's log via the `log` FIFO)
  ShutdownControl& shutdown;              // ends the shim; its keepers decide Shutdown
  ShimIdentity identity;                  // who this shim is
  // The default buffer of the processes' output FIFOs (ServerOptions::output_buffer);
  // the process tier applies a container's io.libshim.output.* annotations over it.
  OutputBufferOptions output_buffer;
};

}  // namespace shim
