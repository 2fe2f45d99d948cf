// TtrpcClient: unary ttrpc calls over one connection (unix socket or vsock), multiplexed.
// Threading: see the class comment.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>

#include "shim/status.h"
#include "shim/ttrpc/call.h"

namespace shim::ttrpc {

// Per call.
struct CallOptions {
  // Sent as timeout_nano; the call fails with DeadlineExceeded locally when it passes.
  std::optional<std::chrono::nanoseconds> timeout;
  Metadata metadata;  // request metadata
};

// status OK -> payload is the serialized response message.
using CallCallback = std::function<void(Status status, std::string payload)>;

// Per connection.
struct ClientOptions {
  std::uint32_t max_message_size = kMaxMessageSize;  // larger frames are refused (both directions)
};

// All methods are thread-safe (they post to the executor); callbacks run on the
// executor. When the connection fails or the peer closes it, every pending call fails
// with Unavailable "ttrpc: closed" and later calls fail the same way at once. Dropping
// the last reference closes the connection too. on_close gets OK after close(),
// Unavailable otherwise; registered after the end, it is called at once (posted).
class TtrpcClient : public std::enable_shared_from_this<TtrpcClient> {
 public:
  // A client that will use `executor`; connect() before calling.
  static std::shared_ptr<TtrpcClient> create(boost::asio::any_io_executor executor,
                                             ClientOptions options = {});
  virtual ~TtrpcClient() = default;

  // `address` is "unix:///path", "/path", or "vsock://CID:PORT" (AF_VSOCK: a VM shim's
  // guest agent).
  virtual void connect(std::string address, std::function<void(Status)> done) = 0;
  // Instead of connect(): serves calls over `fd`, a connected stream socket (unix or
  // vsock) the caller dialled itself, e.g. after a guest agent's announcement
  // (shim/ttrpc/agent_channel.h). Takes the fd, which is closed on error.
  virtual void adopt(int fd, std::function<void(Status)> done) = 0;
  virtual void call(std::string service, std::string method, std::string payload,
                    CallOptions options, CallCallback done) = 0;
  // Closes the connection; pending and later calls fail.
  virtual void close() = 0;
  // Called once, on the executor, when the connection ends for any reason.
  virtual void on_close(std::function<void(Status)> callback) = 0;
  // Whether connect() succeeded and the connection has not ended.
  virtual bool connected() const = 0;

 protected:
  TtrpcClient() = default;
};

// Strips an optional "unix://" scheme; other schemes are an InvalidArgument error.
Status unix_socket_path(std::string_view address, std::string* path);

}  // namespace shim::ttrpc
