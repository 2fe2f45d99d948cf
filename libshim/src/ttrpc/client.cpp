#include "shim/ttrpc/client.h"

#include <array>
#include <cstring>
#include <unordered_map>

#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "ttrpc/dial_address.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_writer.h"
#include "ttrpc/unix_socket.h"
#include "ttrpc/wire.h"

namespace shim::ttrpc {

namespace asio = boost::asio;
using asio::generic::stream_protocol;

Status unix_socket_path(std::string_view address, std::string* path) {
  constexpr std::string_view kScheme = "unix://";
  if (address.starts_with(kScheme)) {
    address.remove_prefix(kScheme.size());
  } else if (address.find("://") != std::string_view::npos) {
    return Status(Code::kInvalidArgument,
                  fmt::format("ttrpc: unsupported address scheme in {}", address));
  }
  if (address.empty()) return Status(Code::kInvalidArgument, "ttrpc: empty socket address");
  if (address.size() >= sizeof(sockaddr_un::sun_path)) {
    return Status(Code::kInvalidArgument,
                  fmt::format("ttrpc: socket path {} is longer than {} bytes", address,
                              sizeof(sockaddr_un::sun_path) - 1));
  }
  path->assign(address);
  return Status();
}

namespace {

Status closed_status() { return Status(Code::kUnavailable, "ttrpc: closed"); }

// The connection and its calls. Its async operations keep it alive; the handle given to
// users (ClientHandle) closes it when dropped.
class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore(asio::any_io_executor executor, ClientOptions options)
      : executor_(std::move(executor)),
        options_(options),
        socket_(executor_),
        decoder_(options.max_message_size) {}

  const asio::any_io_executor& executor() const { return executor_; }
  bool connected() const { return connected_.load(std::memory_order_acquire); }

  void connect(const std::string& address, std::function<void(Status)> done);
  void adopt(int fd, std::function<void(Status)> done);
  void call(std::string_view service, std::string_view method, std::string_view payload,
            const CallOptions& options, CallCallback done);
  void close(Status reason);
  void on_close(std::function<void(Status)> callback);

 private:
  enum class State { kIdle, kConnecting, kConnected, kClosed };
  struct Pending {
    CallCallback done;
    std::optional<asio::steady_timer> deadline;
  };

  void fail_later(CallCallback done, Status status);
  void read();
  void on_read(const boost::system::error_code& error, std::size_t size);
  void handle_response(const Frame& frame);
  void on_deadline(std::uint32_t stream_id);
  void send(std::string frame);
  void write();

  asio::any_io_executor executor_;
  ClientOptions options_;
  stream_protocol::socket socket_;
  FrameDecoder decoder_;
  FrameWriter writer_;
  State state_ = State::kIdle;
  std::atomic<bool> connected_{false};
  std::uint32_t next_stream_id_ = 1;
  std::unordered_map<std::uint32_t, Pending> pending_;
  std::function<void(Status)> on_close_;
  std::optional<Status> close_reason_;
  std::array<char, 32 * 1024> read_buffer_;
};

void ClientCore::connect(const std::string& address, std::function<void(Status)> done) {
  auto finish = [this, &done](Status status) {
    if (done) asio::post(executor_, [done = std::move(done), status] { done(status); });
  };
  if (state_ != State::kIdle) {
    finish(Status(Code::kFailedPrecondition, "ttrpc: connect called twice"));
    return;
  }
  DialAddress target;
  Status status = parse_dial_address(address, &target);
  int fd = -1;
  if (status.ok()) {
    fd = ::socket(target.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
      status = Status(Code::kUnavailable, fmt::format("ttrpc: socket for {}: {}",
                                                      target.description, std::strerror(errno)));
  }
  boost::system::error_code error;
  if (fd >= 0) {
    socket_.assign(stream_protocol(target.family, 0), fd, error);
    if (error) ::close(fd);
  }
  if (!status.ok() || error) {
    if (status.ok()) status = Status(Code::kUnavailable, error.message());
    close(status);
    finish(status);
    return;
  }
  state_ = State::kConnecting;
  socket_.async_connect(stream_protocol::endpoint(&target.storage, target.length),
                        [self = shared_from_this(), where = target.description,
                         done = std::move(done)](const boost::system::error_code& error) {
                          Status status;
                          if (self->state_ != State::kConnecting) {
                            status = closed_status();
                          } else if (error) {
                            status =
                                Status(Code::kUnavailable,
                                       fmt::format("ttrpc: dial {}: {}", where, error.message()));
                            self->close(status);
                          } else {
                            self->state_ = State::kConnected;
                            self->connected_.store(true, std::memory_order_release);
                            self->read();
                            self->write();  // calls made while connecting
                          }
                          if (done) done(status);
                        });
}

void ClientCore::adopt(int fd, std::function<void(Status)> done) {
  Status status;
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (state_ != State::kIdle) {
    // The connection this client has (or had) stays as it is.
    ::close(fd);
    Status refused(Code::kFailedPrecondition, "ttrpc: adopt after connect");
    if (done) asio::post(executor_, [done = std::move(done), refused] { done(refused); });
    return;
  }
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    status = Status(Code::kInvalidArgument,
                    fmt::format("ttrpc: adopt fd {}: {}", fd, std::strerror(errno)));
  }
  boost::system::error_code error;
  if (status.ok()) socket_.assign(stream_protocol(address.ss_family, 0), fd, error);
  if (!status.ok() || error) {
    ::close(fd);
    if (status.ok()) status = Status(Code::kUnavailable, error.message());
    close(status);
  } else {
    state_ = State::kConnected;
    connected_.store(true, std::memory_order_release);
    read();
    write();  // calls made before
  }
  if (done) asio::post(executor_, [done = std::move(done), status] { done(status); });
}

void ClientCore::fail_later(CallCallback done, Status status) {
  asio::post(executor_, [done = std::move(done), status = std::move(status)] { done(status, {}); });
}

void ClientCore::call(std::string_view service, std::string_view method, std::string_view payload,
                      const CallOptions& options, CallCallback done) {
  if (state_ == State::kIdle)
    return fail_later(std::move(done), Status(Code::kUnavailable, "ttrpc: not connected"));
  if (state_ == State::kClosed) return fail_later(std::move(done), closed_status());
  if (options.timeout && options.timeout->count() <= 0) {
    return fail_later(std::move(done),
                      Status(Code::kDeadlineExceeded, "context deadline exceeded"));
  }
  std::uint32_t stream_id = next_stream_id_;
  next_stream_id_ += 2;  // client streams are odd: 1, 3, 5, ...
  std::string frame =
      wire::request_frame(stream_id, service, method, payload, options.timeout, options.metadata);
  if (frame.size() - kHeaderSize > options_.max_message_size) {
    return fail_later(std::move(done), wire::oversized_status(frame.size() - kHeaderSize,
                                                              options_.max_message_size));
  }
  Pending& pending = pending_[stream_id];
  pending.done = std::move(done);
  if (options.timeout) {
    pending.deadline.emplace(executor_, *options.timeout);
    pending.deadline->async_wait(
        [weak = weak_from_this(), stream_id](const boost::system::error_code& error) {
          if (error) return;
          if (auto self = weak.lock()) self->on_deadline(stream_id);
        });
  }
  send(std::move(frame));
}

void ClientCore::on_deadline(std::uint32_t stream_id) {
  auto it = pending_.find(stream_id);
  if (it == pending_.end()) return;
  CallCallback done = std::move(it->second.done);
  pending_.erase(it);  // a late response finds nothing
  done(Status(Code::kDeadlineExceeded, "context deadline exceeded"), {});
}

void ClientCore::close(Status reason) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  connected_.store(false, std::memory_order_release);
  boost::system::error_code ignored;
  socket_.close(ignored);
  writer_.drop_queued();
  close_reason_ = reason;
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [stream_id, call] : pending) {
    call.deadline.reset();
    call.done(closed_status(), {});
  }
  if (on_close_) {
    auto callback = std::move(on_close_);
    on_close_ = nullptr;
    callback(std::move(reason));
  }
}

void ClientCore::on_close(std::function<void(Status)> callback) {
  if (state_ != State::kClosed) {
    on_close_ = std::move(callback);
    return;
  }
  if (callback)
    asio::post(executor_,
               [callback = std::move(callback), reason = *close_reason_] { callback(reason); });
}

void ClientCore::read() {
  socket_.async_read_some(
      asio::buffer(read_buffer_),
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t size) {
        self->on_read(error, size);
      });
}

void ClientCore::on_read(const boost::system::error_code& error, std::size_t size) {
  if (state_ == State::kClosed) return;
  if (error) {
    close(error == asio::error::eof
              ? closed_status()
              : Status(Code::kUnavailable, fmt::format("ttrpc: {}", error.message())));
    return;
  }
  decoder_.feed(std::string_view(read_buffer_.data(), size));
  while (state_ != State::kClosed) {
    auto frame = decoder_.next();
    if (!frame) break;
    if (frame->header.type == static_cast<std::uint8_t>(FrameType::kResponse))
      handle_response(*frame);
  }
  if (state_ != State::kClosed) read();
}

void ClientCore::handle_response(const Frame& frame) {
  auto it = pending_.find(frame.header.stream_id);
  if (it == pending_.end()) return;  // timed out already, or not ours
  CallCallback done = std::move(it->second.done);
  pending_.erase(it);
  if (frame.oversized) {
    done(wire::oversized_status(frame.header.length, options_.max_message_size), {});
    return;
  }
  std::string payload;
  Status status = wire::decode_response(frame.payload, &payload);
  done(std::move(status), std::move(payload));
}

void ClientCore::send(std::string frame) {
  if (writer_.push(std::move(frame)) && state_ == State::kConnected) write();
}

void ClientCore::write() {
  auto buffers = writer_.start();
  if (buffers.empty()) return;
  asio::async_write(
      socket_, buffers,
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
        bool more = self->writer_.finish();
        if (self->state_ == State::kClosed) return;
        if (error) {
          self->close(Status(Code::kUnavailable, fmt::format("ttrpc: {}", error.message())));
          return;
        }
        if (more) self->write();
      });
}

// What users hold: thread-safe front that posts to the executor, and closes the
// connection when the last reference goes.
class ClientHandle final : public TtrpcClient {
 public:
  explicit ClientHandle(std::shared_ptr<ClientCore> core) : core_(std::move(core)) {}
  ~ClientHandle() override {
    asio::post(core_->executor(), [core = core_] { core->close(Status()); });
  }

  void connect(std::string address, std::function<void(Status)> done) override {
    asio::dispatch(core_->executor(),
                   [core = core_, address = std::move(address), done = std::move(done)]() mutable {
                     core->connect(address, std::move(done));
                   });
  }

  void adopt(int fd, std::function<void(Status)> done) override {
    asio::dispatch(core_->executor(), [core = core_, fd, done = std::move(done)]() mutable {
      core->adopt(fd, std::move(done));
    });
  }

  void call(std::string service, std::string method, std::string payload, CallOptions options,
            CallCallback done) override {
    asio::dispatch(core_->executor(),
                   [core = core_, service = std::move(service), method = std::move(method),
                    payload = std::move(payload), options = std::move(options),
                    done = std::move(done)]() mutable {
                     core->call(service, method, payload, options, std::move(done));
                   });
  }

  void close() override {
    asio::dispatch(core_->executor(), [core = core_] { core->close(Status()); });
  }

  void on_close(std::function<void(Status)> callback) override {
    asio::dispatch(core_->executor(), [core = core_, callback = std::move(callback)]() mutable {
      core->on_close(std::move(callback));
    });
  }

  bool connected() const override { return core_->connected(); }

 private:
  std::shared_ptr<ClientCore> core_;
};

}  // namespace

std::shared_ptr<TtrpcClient> TtrpcClient::create(asio::any_io_executor executor,
                                                 ClientOptions options) {
  return std::make_shared<ClientHandle>(std::make_shared<ClientCore>(std::move(executor), options));
}

}  // namespace shim::ttrpc
