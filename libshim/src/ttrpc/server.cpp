#include "ttrpc/server.h"

#include <cerrno>
#include <chrono>

#include <malloc.h>
#include <unistd.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "ttrpc/server_connection.h"
#include "ttrpc/server_impl.h"
#include "ttrpc/unix_socket.h"

namespace shim::ttrpc {

namespace asio = boost::asio;
using asio::local::stream_protocol;

// ---- Impl -------------------------------------------------------------------------

void TtrpcServer::Impl::listen(int listen_fd) {
  if (closed_ || shutting_down_) {
    ::close(listen_fd);
    return;
  }
  auto acceptor = std::make_unique<Acceptor>(executor_);
  boost::system::error_code error;
  acceptor->assign(stream_protocol(), listen_fd, error);
  if (error) {
    ::close(listen_fd);
    return;
  }
  acceptors_.push_back(std::move(acceptor));
  wait_accept(acceptors_.back().get());
}

void TtrpcServer::Impl::wait_accept(Acceptor* acceptor) {
  acceptor->async_wait(Acceptor::wait_read, [self = shared_from_this(),
                                             acceptor](const boost::system::error_code& error) {
    if (error || self->closed_ || self->shutting_down_ || self->suspended_) return;
    self->accept_ready(acceptor);
  });
}

void TtrpcServer::Impl::accept_ready(Acceptor* acceptor) {
  // Accept ourselves (accept4 + SOCK_CLOEXEC) until the backlog is empty.
  for (;;) {
    int fd = accept_unix(acceptor->native_handle());
    if (fd >= 0) {
      adopt(fd);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    // EMFILE and friends: the fd stays readable; back off instead of spinning.
    retry_accept_later(acceptor);
    return;
  }
  wait_accept(acceptor);
}

void TtrpcServer::Impl::retry_accept_later(Acceptor* acceptor) {
  auto timer = std::make_shared<asio::steady_timer>(executor_, std::chrono::milliseconds(100));
  timer->async_wait([self = shared_from_this(), acceptor, timer](const boost::system::error_code&) {
    if (self->closed_ || self->shutting_down_ || !acceptor->is_open()) return;
    self->wait_accept(acceptor);
  });
}

void TtrpcServer::Impl::adopt(int fd) {
  if (context_->options.require_same_user && !peer_is_same_user(fd)) {
    ::close(fd);  // as Go's UnixSocketRequireSameUser: drop the connection
    return;
  }
  if (auto connection = add_connection(fd)) connection->start();
}

std::shared_ptr<ServerConnection> TtrpcServer::Impl::add_connection(int fd) {
  stream_protocol::socket socket(executor_);
  boost::system::error_code error;
  socket.assign(stream_protocol(), fd, error);
  if (error) {
    ::close(fd);
    return nullptr;
  }
  auto connection =
      std::make_shared<ServerConnection>(context_, weak_from_this(), std::move(socket));
  connections_.emplace(connection.get(), connection);
  ++context_->connection_count;
  return connection;
}

void TtrpcServer::Impl::close_acceptors() {
  for (auto& acceptor : acceptors_) {
    boost::system::error_code ignored;
    acceptor->close(ignored);
  }
}

void TtrpcServer::Impl::shutdown(std::function<void()> done) {
  if (closed_) {
    if (done) asio::post(executor_, std::move(done));
    return;
  }
  shutting_down_ = true;
  if (done) {
    // A second shutdown() chains its callback after the first.
    shutdown_done_ = shutdown_done_ ? [first = std::move(shutdown_done_), second = std::move(done)] {
      first();
      second();
    } : std::move(done);
  }
  close_acceptors();
  auto connections = connections_;  // closing removes entries
  for (auto& [raw, connection] : connections) connection->close_when_idle();
  finish_shutdown_if_done();
}

void TtrpcServer::Impl::close() {
  closed_ = true;
  close_acceptors();
  auto connections = std::move(connections_);
  connections_.clear();
  for (auto& [raw, connection] : connections) connection->close();
  finish_shutdown_if_done();
}

void TtrpcServer::Impl::remove(ServerConnection* connection) {
  if (connections_.erase(connection) != 0) --context_->connection_count;
  schedule_trim();
  finish_shutdown_if_done();
}

void TtrpcServer::Impl::suspend_input() {
  suspended_ = true;
  for (auto& acceptor : acceptors_) {
    boost::system::error_code ignored;
    acceptor->cancel(ignored);
  }
  for (auto& [raw, connection] : connections_) connection->suspend();
}

void TtrpcServer::Impl::resume_input() {
  if (!suspended_) return;
  suspended_ = false;
  if (closed_ || shutting_down_) return;
  for (auto& acceptor : acceptors_) wait_accept(acceptor.get());
  for (auto& [raw, connection] : connections_) connection->resume();
}

bool TtrpcServer::Impl::replies_written() const {
  for (const auto& [raw, connection] : connections_) {
    if (!connection->replies_written()) return false;
  }
  return true;
}

Status TtrpcServer::Impl::save_for_upgrade(SavedServer* saved) const {
  for (const auto& acceptor : acceptors_) {
    saved->listeners.push_back(const_cast<Acceptor&>(*acceptor).native_handle());
  }
  for (const auto& [raw, connection] : connections_) {
    SavedConnection entry;
    if (Status s = connection->save(&entry); !s.ok()) return s;
    saved->connections.push_back(std::move(entry));
  }
  return {};
}

// The peer was checked when the previous program accepted it.
void TtrpcServer::Impl::adopt_connection(int fd, std::string first_reply, std::string received) {
  auto connection = add_connection(fd);
  if (!connection) return;
  if (!first_reply.empty()) connection->send_frame(std::move(first_reply));
  connection->receive(received);
  connection->start();
}

// A closed connection freed its decoder and reply buffers, but glibc keeps freed pages
// that are not at the top of the heap: give them back soon after a burst of closes (the
// connections of a client that left close within a few loop turns), ten times a second
// at most (a trim walks the heap: about a millisecond for a shim's heap after a hostile
// load, so at most 1 % of a core for a peer that connects and closes in a loop).
void TtrpcServer::Impl::schedule_trim() {
#ifdef __GLIBC__
  if (!context_->options.trim_memory || trim_scheduled_ || closed_) return;
  trim_scheduled_ = true;
  auto timer = std::make_shared<asio::steady_timer>(executor_, std::chrono::milliseconds(100));
  timer->async_wait([self = shared_from_this(), timer](const boost::system::error_code& error) {
    self->trim_scheduled_ = false;
    if (!error) ::malloc_trim(0);
  });
#endif
}

void TtrpcServer::Impl::finish_shutdown_if_done() {
  if (!connections_.empty() || !shutdown_done_) return;
  if (!shutting_down_ && !closed_) return;
  asio::post(executor_, std::move(shutdown_done_));
  shutdown_done_ = nullptr;
}

// ---- TtrpcServer ------------------------------------------------------------------

TtrpcServer::TtrpcServer(asio::any_io_executor executor, Router router, ServerOptions options)
    : impl_(std::make_shared<Impl>(
          std::make_shared<ServerContext>(std::move(executor), std::move(router), options))) {}

TtrpcServer::~TtrpcServer() {
  // Posted, so that a server destroyed on another thread does not race the executor.
  asio::post(impl_->executor(), [impl = impl_] { impl->close(); });
}

Status TtrpcServer::serve_fd(int listen_fd) {
  Status status = prepare_listen_fd(listen_fd);
  if (!status.ok()) {
    ::close(listen_fd);
    return status;
  }
  asio::dispatch(impl_->executor(), [impl = impl_, listen_fd] { impl->listen(listen_fd); });
  return Status();
}

Status TtrpcServer::serve_path(const std::string& path) {
  Status status;
  int fd = listen_unix_path(path, &status);
  if (fd < 0) return status;
  return serve_fd(fd);
}

void TtrpcServer::shutdown(std::function<void()> done) {
  asio::dispatch(impl_->executor(), [impl = impl_, done = std::move(done)]() mutable {
    impl->shutdown(std::move(done));
  });
}

void TtrpcServer::close() {
  asio::dispatch(impl_->executor(), [impl = impl_] { impl->close(); });
}

void TtrpcServer::suspend_input() { impl_->suspend_input(); }
void TtrpcServer::resume_input() { impl_->resume_input(); }
bool TtrpcServer::replies_written() const { return impl_->replies_written(); }
Status TtrpcServer::save_for_upgrade(SavedServer* saved) const {
  return impl_->save_for_upgrade(saved);
}
void TtrpcServer::adopt_connection(int fd, std::string first_reply, std::string received) {
  impl_->adopt_connection(fd, std::move(first_reply), std::move(received));
}

std::size_t TtrpcServer::connection_count() const {
  return impl_->context().connection_count.load();
}

std::size_t TtrpcServer::calls_in_flight() const { return impl_->context().calls_in_flight.load(); }

}  // namespace shim::ttrpc
