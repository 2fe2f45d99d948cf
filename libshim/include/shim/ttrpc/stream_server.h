// StreamServer: serves a Router on connections a program already has, rather than on a
// listening socket: a guest agent's channel to its shim (a virtio-serial port, which is a
// character device, or an accepted vsock connection).
//
// Threading: construct, serve and destroy on the executor's thread (a single-threaded
// loop); handlers run there, as on the shim's server (shim/ttrpc/call.h).
#pragma once

#include <cstddef>
#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "shim/status.h"
#include "shim/ttrpc/router.h"

namespace shim::ttrpc {

class TtrpcServer;

// Serves one Router on fds handed to it (see the file's description).
class StreamServer {
 public:
  // Serves `router` on `executor` (single-threaded).
  StreamServer(boost::asio::any_io_executor executor, Router router);
  ~StreamServer();  // closes every connection; calls in flight are dropped
  StreamServer(const StreamServer&) = delete;
  StreamServer& operator=(const StreamServer&) = delete;

  // Serves ttrpc on `fd` (taken): a connected stream socket, or any other stream fd (a
  // character device such as /dev/vport0p1, a pipe pair's end), whose bytes are then
  // relayed through a socket pair. No peer credential check: whoever holds the other end
  // is the peer the caller chose.
  [[nodiscard]] Status serve(int fd);

  // Connections still open (a relayed fd counts as the socket pair's end the server has).
  std::size_t connection_count() const;

 private:
  class Relays;
  boost::asio::any_io_executor executor_;
  std::unique_ptr<TtrpcServer> server_;
  std::shared_ptr<Relays> relays_;
};

}  // namespace shim::ttrpc
