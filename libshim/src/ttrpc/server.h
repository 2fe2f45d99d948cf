// TtrpcServer: serves ttrpc on unix sockets from one Asio executor.
//
// Every connection reads frames continuously and runs each request as soon as it is
// complete, so many calls per connection are in flight and answered in any order
// (containerd keeps a Wait blocked on the connection it sends State and Kill on).
// Writes are queued per connection; the reader never waits for the writer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "shim/status.h"
#include "shim/ttrpc/router.h"
#include "ttrpc/frame.h"

namespace shim::ttrpc {

// What a live upgrade carries of a server to the shim's next program
// (docs/live-upgrade.md): fds stay open across the exec; calls in flight are sent to the
// new program's server again as request frames.
struct SavedCall {
  std::uint32_t stream_id = 0;
  std::string message;  // the ttrpc Request message as received
};
struct SavedConnection {
  int fd = -1;
  std::string received;  // bytes read but not yet handled (whole or partial frames)
  std::vector<SavedCall> calls;
};
struct SavedServer {
  std::vector<int> listeners;
  std::vector<SavedConnection> connections;
};

struct ServerOptions {
  std::uint32_t max_message_size = kMaxMessageSize;
  // Drop connections whose SO_PEERCRED uid/gid differ from our effective uid/gid, as
  // the Go shim does (ttrpc.UnixSocketRequireSameUser).
  bool require_same_user = true;
  // Back-pressure per connection, as a Go ttrpc server gets from its blocking writes: a
  // connection whose unwritten replies exceed this many bytes, or that has this many
  // calls unanswered, is not read from until it is below half of both again. So a peer
  // that pipelines requests and never reads its replies holds at most about this much.
  std::size_t max_pending_reply_bytes = 1u << 20;
  std::size_t max_calls_per_connection = 4096;
  // After connections close, give freed heap pages back to the kernel (glibc malloc_trim,
  // 100 ms after a burst of closes, ten times a second at most): hostile or bursty peers
  // must not leave the shim's RSS high.
  bool trim_memory = true;
  // In a graceful shutdown, how long an idle connection stays open for its peer to close
  // it first. Go's ttrpc client picks at random between a reply and the connection's end
  // when both are ready (client.go dispatch), so closing right after the last reply can
  // turn that reply into ttrpc.ErrClosed; containerd closes its client after Shutdown
  // and ShutdownSandbox, so the normal wait is one round trip.
  std::chrono::milliseconds shutdown_linger{1000};
};

// The executor must run handlers one at a time (a single-threaded io_context or a
// strand): connections share one read buffer. The executor's context must outlive the server.
// Destroying the server posts close().
class TtrpcServer {
 public:
  TtrpcServer(boost::asio::any_io_executor executor, Router router, ServerOptions options = {});
  ~TtrpcServer();
  TtrpcServer(const TtrpcServer&) = delete;
  TtrpcServer& operator=(const TtrpcServer&) = delete;

  // Serve on an already bound and listening AF_UNIX socket (the shim's fd 3). Takes
  // ownership of the fd.
  Status serve_fd(int listen_fd);
  // Bind `path` (a stale socket file there is replaced), chmod 0600, listen and serve.
  // The file is left in place when the server stops.
  Status serve_path(const std::string& path);

  // Graceful stop: stop accepting, let in-flight calls finish and their replies go out,
  // close each connection once it is idle and its peer has closed it or
  // `shutdown_linger` has passed, then call `done` (on the executor).
  void shutdown(std::function<void()> done);
  // Immediate stop: close the listener and every connection; pending calls are dropped.
  void close();

  // Live upgrade, on the executor only. suspend_input(): stop accepting and reading
  // (bytes wait in the sockets); replies still go out. resume_input() undoes it.
  void suspend_input();
  void resume_input();
  // Whether every reply given so far has been written to its socket.
  bool replies_written() const;
  // The listening fds and, per connection, its fd, unhandled bytes and calls in flight.
  // FailedPrecondition while a connection is skipping an oversized frame.
  Status save_for_upgrade(SavedServer* saved) const;
  // Serves a connection of the previous program: `first_reply` (a whole frame, may be
  // empty) is written first, then `received` is handled as if just read.
  void adopt_connection(int fd, std::string first_reply, std::string received);

  std::size_t connection_count() const;
  std::size_t calls_in_flight() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace shim::ttrpc
