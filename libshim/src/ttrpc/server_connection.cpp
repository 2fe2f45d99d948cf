#include "ttrpc/server_connection.h"

#include <algorithm>
#include <chrono>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "ttrpc/wire.h"

namespace shim::ttrpc {

namespace asio = boost::asio;

ServerConnection::ServerConnection(std::shared_ptr<ServerContext> context,
                                   std::weak_ptr<TtrpcServer::Impl> server,
                                   asio::local::stream_protocol::socket socket)
    : context_(std::move(context)),
      server_(std::move(server)),
      socket_(std::move(socket)),
      decoder_(context_->options.max_message_size) {}

void ServerConnection::start() {
  boost::system::error_code error;
  socket_.non_blocking(true, error);  // on_readable reads until EAGAIN
  read();
}

void ServerConnection::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  linger_.reset();
  context_->calls_in_flight -= calls_.size();
  calls_.clear();  // destroys the deadline timers; late replies find nothing
  writer_.drop_queued();
  if (auto server = server_.lock()) server->remove(this);
}

void ServerConnection::close_when_idle() {
  close_when_idle_ = true;
  maybe_close_idle();
}

void ServerConnection::maybe_close_idle() {
  if (!close_when_idle_ || closed_ || !calls_.empty() || !writer_.idle()) return;
  if (linger_over_ || context_->options.shutdown_linger.count() <= 0) return close();
  start_linger();  // the peer's EOF (read() sees it) closes sooner
}

void ServerConnection::start_linger() {
  if (linger_) return;
  linger_.emplace(context_->executor, context_->options.shutdown_linger);
  linger_->async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (error || self->closed_) return;
    if (!self->calls_.empty() || !self->writer_.idle()) {
      self->linger_.reset();  // a call came meanwhile: linger again after its reply
      return;
    }
    self->linger_over_ = true;
    self->maybe_close_idle();
  });
}

// The readiness wait stays armed (cancelling it would race a resume in the same turn,
// its aborted completion then looking like an error): if it fires while suspended, the
// bytes are left in the socket for resume() to read.
void ServerConnection::suspend() { suspended_ = true; }

void ServerConnection::resume() {
  if (!suspended_ || closed_) return;
  suspended_ = false;
  asio::post(context_->executor, [self = shared_from_this()] { self->on_readable(); });
}

shim::Status ServerConnection::save(SavedConnection* saved) {
  if (decoder_.discarding()) {
    return shim::Status(Code::kFailedPrecondition,
                        "a connection is skipping an oversized frame; try again");
  }
  saved->fd = socket_.native_handle();
  saved->received = std::string(decoder_.pending());
  // In arrival order: call ids grow with each request.
  std::vector<std::pair<std::uint64_t, SavedCall>> ordered;
  for (const auto& [id, call] : calls_) ordered.push_back({id, {call.stream_id, call.message}});
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [id, call] : ordered) saved->calls.push_back(std::move(call));
  return {};
}

void ServerConnection::deliver(std::uint64_t call_id, std::string frame) {
  // Never send what the peer must refuse (ttrpc 1.2 refuses oversized sends too).
  std::uint32_t limit = context_->options.max_message_size;
  if (frame.size() - kHeaderSize > limit) {
    auto header = decode_header(frame.data());
    frame = wire::response_frame(header.stream_id,
                                 wire::oversized_status(frame.size() - kHeaderSize, limit), {});
  }
  asio::dispatch(context_->executor,
                 [self = shared_from_this(), call_id, frame = std::move(frame)]() mutable {
                   self->finish_call(call_id, std::move(frame));
                 });
}

// Waits for readability, then reads into the server's shared buffer: an idle connection
// holds no buffer. Edge-triggered readiness: wait only after a read saw EAGAIN.
void ServerConnection::read() {
  if (closed_ || waiting_readable_ || suspended_) return;
  if (over_limits()) {
    paused_ = true;
    return;
  }
  waiting_readable_ = true;
  socket_.async_wait(asio::socket_base::wait_read,
                     [self = shared_from_this()](const boost::system::error_code& error) {
                       self->waiting_readable_ = false;
                       if (self->closed_) return;
                       if (error) return self->close();
                       if (self->suspended_) return;
                       self->on_readable();
                     });
}

void ServerConnection::on_readable() {
  // A fair share per turn: a peer that writes as fast as we read must not starve the
  // loop. The rest is read on a later turn, posted (no new readiness edge would come).
  constexpr std::size_t kBytesPerTurn = 256 * 1024;
  auto& buffer = context_->read_buffer;
  std::size_t total = 0;
  if (suspended_) return;
  receive({});  // frames left over from before a pause
  while (!closed_ && !suspended_ && total < kBytesPerTurn) {
    if (over_limits()) {
      paused_ = true;
      return;
    }
    boost::system::error_code error;
    std::size_t size = socket_.read_some(asio::buffer(buffer), error);
    if (error == asio::error::would_block || error == asio::error::try_again) return read();
    if (error == asio::error::interrupted) continue;
    if (error) return close();  // EOF, reset, or a frame cut by the peer
    total += size;
    receive(std::string_view(buffer.data(), size));
  }
  if (!closed_ && !suspended_) {
    asio::post(context_->executor, [self = shared_from_this()] { self->on_readable(); });
  }
}

// Frames beyond a back-pressure limit stay in the decoder (at most one read's worth)
// until the connection is below half again; resuming handles them first.
void ServerConnection::receive(std::string_view bytes) {
  if (closed_) return;
  decoder_.feed(bytes);
  while (!closed_ && !suspended_ && !over_limits()) {
    auto frame = decoder_.next();
    if (!frame) break;
    handle_frame(*frame);
  }
  if (closed_) return;
  maybe_close_idle();
}

bool ServerConnection::over_limits() const {
  const ServerOptions& options = context_->options;
  return writer_.pending_bytes() > options.max_pending_reply_bytes ||
         calls_.size() >= options.max_calls_per_connection;
}

void ServerConnection::resume_if_below_limits() {
  if (!paused_ || closed_) return;
  const ServerOptions& options = context_->options;
  if (writer_.pending_bytes() > options.max_pending_reply_bytes / 2 ||
      calls_.size() > options.max_calls_per_connection / 2) {
    return;
  }
  paused_ = false;
  // Bytes may be waiting in the socket already: read them now, not on an edge.
  asio::post(context_->executor, [self = shared_from_this()] { self->on_readable(); });
}

void ServerConnection::handle_frame(const Frame& frame) {
  const FrameHeader& header = frame.header;
  // Same order of checks as the Go server: size, stream id, then type.
  if (frame.oversized) {
    send_status(header.stream_id,
                wire::oversized_status(header.length, context_->options.max_message_size));
    return;
  }
  if (header.stream_id % 2 != 1) {
    send_status(header.stream_id, Status(Code::kInvalidArgument,
                                         "StreamID must be odd for client initiated streams"));
    return;
  }
  // Data (streaming) and Response frames and unknown types are ignored, as ttrpc 1.1 does.
  if (header.type != static_cast<std::uint8_t>(FrameType::kRequest)) return;
  handle_request(header.stream_id, frame.payload);
}

void ServerConnection::handle_request(std::uint32_t stream_id, const std::string& message) {
  wire::RequestView request;
  if (!wire::decode_request(message, &request)) {
    send_status(stream_id,
                Status(Code::kInvalidArgument,
                       "unmarshal request error: proto: cannot parse invalid wire-format data"));
    return;
  }
  Status unimplemented;
  const Handler* handler = context_->router.find(request.service, request.method, &unimplemented);
  if (handler == nullptr) {
    send_status(stream_id, unimplemented);
    return;
  }

  CallInfo call;
  call.service = request.service;
  call.method = request.method;
  call.stream_id = stream_id;
  call.metadata = std::move(request.metadata);
  if (request.timeout_nano > 0) {
    // A timeout beyond the clock's range (a peer can send INT64_MAX) means no deadline.
    auto now = std::chrono::steady_clock::now();
    std::chrono::nanoseconds timeout(request.timeout_nano);
    if (timeout < std::chrono::steady_clock::time_point::max() - now) call.deadline = now + timeout;
  }

  std::uint64_t call_id = next_call_id_++;
  auto state = std::make_shared<detail::CallState>(weak_from_this(), call_id, stream_id);
  InFlight& entry = calls_[call_id];
  entry.state = state;
  entry.stream_id = stream_id;
  entry.message = message;
  ++context_->calls_in_flight;
  if (call.deadline) {
    entry.deadline.emplace(context_->executor, *call.deadline);
    entry.deadline->async_wait(
        [weak = weak_from_this(), call_id](const boost::system::error_code& error) {
          if (error) return;
          if (auto self = weak.lock()) self->on_deadline(call_id);
        });
  }

  // The handler may answer (and so erase `entry`) before it returns; keep our own
  // responder so an exception can still be answered.
  Responder responder(std::move(state));
  try {
    (*handler)(call, request.payload, responder);
  } catch (...) {
    responder.fail(wire::status_from_current_exception());
  }
}

void ServerConnection::finish_call(std::uint64_t call_id, std::string frame) {
  if (closed_) return;
  auto it = calls_.find(call_id);
  if (it == calls_.end()) return;  // answered DeadlineExceeded already
  forget_call(it);
  send(std::move(frame));
  resume_if_below_limits();
}

void ServerConnection::on_deadline(std::uint64_t call_id) {
  if (closed_) return;
  auto it = calls_.find(call_id);
  if (it == calls_.end()) return;
  auto state = it->second.state.lock();
  // No state: every responder is gone and the Internal reply is on its way. A failed
  // claim: a reply was given and is on its way. Either way it wins.
  if (!state || !state->claim()) return;
  std::uint32_t stream_id = it->second.stream_id;
  forget_call(it);
  send_status(stream_id, Status(Code::kDeadlineExceeded, "context deadline exceeded"));
  resume_if_below_limits();
}

void ServerConnection::forget_call(std::unordered_map<std::uint64_t, InFlight>::iterator it) {
  calls_.erase(it);
  --context_->calls_in_flight;
}

void ServerConnection::send_status(std::uint32_t stream_id, const Status& status) {
  send(wire::response_frame(stream_id, status, {}));
}

void ServerConnection::send(std::string frame) {
  if (closed_) return;
  if (writer_.push(std::move(frame))) write();
}

void ServerConnection::write() {
  auto buffers = writer_.start();
  if (buffers.empty()) return;
  asio::async_write(
      socket_, buffers,
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
        bool more = self->writer_.finish();
        if (self->closed_) return;
        if (error) {
          self->close();
          return;
        }
        if (more) {
          self->write();
        } else {
          self->maybe_close_idle();
        }
        self->resume_if_below_limits();
      });
}

}  // namespace shim::ttrpc
