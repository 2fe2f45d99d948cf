#include "protocol/shutdown_sequence.h"

#include <unistd.h>

#include <boost/asio/post.hpp>

namespace shim::detail {
namespace {

constexpr auto kDrainTimeout = std::chrono::seconds(2);  // in-flight replies at shutdown
constexpr auto kFlushTimeout = std::chrono::seconds(5);  // events at shutdown (Go: 5 s)

}  // namespace

ShutdownSequence::ShutdownSequence(boost::asio::io_context& loop, Logger& logger)
    : loop_(loop), logger_(logger), timer_(loop), linger_timer_(loop) {}

void ShutdownSequence::attach(ttrpc::TtrpcServer* server, EventForwarder* forwarder,
                              std::string socket_path) {
  server_ = server;
  forwarder_ = forwarder;
  socket_path_ = std::move(socket_path);
  if (::lstat(socket_path_.c_str(), &socket_file_) != 0) socket_file_ = {};
  attached_.store(true, std::memory_order_release);
}

void ShutdownSequence::request_shutdown() {
  close_door();
  boost::asio::post(loop_, [this] { begin(); });
}

void ShutdownSequence::when_unused() {
  if (linger_.count() <= 0) return request_shutdown();
  logger_.info("shim unused, lingering", {{"linger_ms", linger_.count()}});
  linger_timer_.expires_after(linger_);
  linger_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || started_) return;
    if (std::string kept = why_kept(); !kept.empty()) {
      logger_.debug("linger over, shim still used", {{"reason", kept}});
      return;
    }
    begin();  // at once, not posted: no Reserve slips in between
  });
}

// No new connections; ending() is true from here on. Before attach() (a request from
// another thread), the posted begin() removes the socket once attached.
void ShutdownSequence::close_door() {
  door_closed_ = true;
  if (!attached_.load(std::memory_order_acquire) || socket_path_.empty()) return;
  if (unlinked_.exchange(true)) return;
  struct stat now {};
  if (::lstat(socket_path_.c_str(), &now) == 0 && now.st_dev == socket_file_.st_dev &&
      now.st_ino == socket_file_.st_ino) {
    ::unlink(socket_path_.c_str());
  }
}

void ShutdownSequence::begin() {
  if (started_) return;
  started_ = true;
  logger_.info("shutting down");
  close_door();
  timer_.expires_after(kDrainTimeout);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) server_->close();  // calls still pending (a Wait) are dropped
  });
  server_->shutdown([this] {
    timer_.cancel();
    flush();
  });
}

void ShutdownSequence::flush() {
  forwarder_->flush(kFlushTimeout, [this](bool delivered) {
    if (!delivered) logger_.warn("events not delivered before exit");
    loop_.stop();
  });
}

}  // namespace shim::detail
