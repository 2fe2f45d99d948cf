// TtrpcServer internals shared by the server and its connections. Everything here runs
// on the server's executor, except the atomic counters.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "ttrpc/server.h"

namespace shim::ttrpc {

class ServerConnection;

// What connections share with the server. Kept apart from Impl so that connections do
// not own the server (no reference cycle if the executor never runs close()).
struct ServerContext {
  ServerContext(boost::asio::any_io_executor executor, Router router, ServerOptions options)
      : executor(std::move(executor)), router(std::move(router)), options(options) {}

  const boost::asio::any_io_executor executor;
  const Router router;
  const ServerOptions options;
  std::atomic<std::size_t> connection_count{0};
  std::atomic<std::size_t> calls_in_flight{0};
  // Every connection reads into this one buffer and copies only the bytes of frames in
  // progress (its decoder's), so an idle connection costs no read buffer.
  std::array<char, 64 * 1024> read_buffer;
};

class TtrpcServer::Impl : public std::enable_shared_from_this<TtrpcServer::Impl> {
 public:
  using Acceptor = boost::asio::local::stream_protocol::acceptor;

  explicit Impl(std::shared_ptr<ServerContext> context)
      : context_(std::move(context)), executor_(context_->executor) {}

  const boost::asio::any_io_executor& executor() const { return executor_; }
  const ServerContext& context() const { return *context_; }

  // Takes ownership of a listening fd and starts accepting on the executor.
  void listen(int listen_fd);
  void shutdown(std::function<void()> done);
  void close();
  // A connection ended; it is forgotten here.
  void remove(ServerConnection* connection);
  // Live upgrade (TtrpcServer's methods of the same names).
  void suspend_input();
  void resume_input();
  bool replies_written() const;
  Status save_for_upgrade(SavedServer* saved) const;
  void adopt_connection(int fd, std::string first_reply, std::string received);

 private:
  void wait_accept(Acceptor* acceptor);
  void accept_ready(Acceptor* acceptor);
  void retry_accept_later(Acceptor* acceptor);
  void adopt(int fd);
  // Serves `fd` as a connection (not started); null, with fd closed, if it is no socket.
  std::shared_ptr<ServerConnection> add_connection(int fd);
  void close_acceptors();
  void finish_shutdown_if_done();
  void schedule_trim();

  std::shared_ptr<ServerContext> context_;
  boost::asio::any_io_executor executor_;
  std::vector<std::unique_ptr<Acceptor>> acceptors_;
  std::unordered_map<ServerConnection*, std::shared_ptr<ServerConnection>> connections_;
  bool shutting_down_ = false;
  bool closed_ = false;
  bool suspended_ = false;  // a live upgrade stopped accepting
  std::function<void()> shutdown_done_;
  bool trim_scheduled_ = false;
};

}  // namespace shim::ttrpc
