// One accepted ttrpc connection: reads frames continuously, runs each request at once,
// answers through a write queue, and enforces per-call deadlines.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include "ttrpc/call_state.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_writer.h"
#include "ttrpc/server_impl.h"

namespace shim::ttrpc {

class ServerConnection final : public CallSink,
                               public std::enable_shared_from_this<ServerConnection> {
 public:
  ServerConnection(std::shared_ptr<ServerContext> context, std::weak_ptr<TtrpcServer::Impl> server,
                   boost::asio::local::stream_protocol::socket socket);

  void start();
  // Closes now; pending calls are forgotten and their late replies dropped.
  void close();
  // Graceful: close once no call is in flight, every reply has been written and the
  // peer closed its end or the server's shutdown_linger passed (still serving meanwhile).
  void close_when_idle();
  // Live upgrade: stop and resume reading (replies still go out); what to carry over.
  void suspend();
  void resume();
  bool replies_written() const { return writer_.idle(); }
  shim::Status save(SavedConnection* saved);
  // Queues a frame as if a call had answered (the Upgrade call, in the new program).
  void send_frame(std::string frame) { send(std::move(frame)); }

  // CallSink: a reply from any thread, handed over to the executor.
  void deliver(std::uint64_t call_id, std::string frame) override;

  // What a read does with the bytes it got: frames out of them, each handled at once.
  // On the executor. The socket's reads call it; tests/fuzz feeds it from memory.
  void receive(std::string_view bytes);

 private:
  struct InFlight {
    std::weak_ptr<detail::CallState> state;
    std::uint32_t stream_id = 0;
    std::optional<boost::asio::steady_timer> deadline;
    std::string message;  // the request as received: a live upgrade sends it again
  };

  void read();
  void on_readable();
  bool over_limits() const;
  void resume_if_below_limits();
  void handle_frame(const Frame& frame);
  void handle_request(std::uint32_t stream_id, const std::string& message);
  void finish_call(std::uint64_t call_id, std::string frame);
  void on_deadline(std::uint64_t call_id);
  void forget_call(std::unordered_map<std::uint64_t, InFlight>::iterator it);
  void send_status(std::uint32_t stream_id, const Status& status);
  void send(std::string frame);
  void write();
  void maybe_close_idle();
  void start_linger();

  std::shared_ptr<ServerContext> context_;
  std::weak_ptr<TtrpcServer::Impl> server_;
  boost::asio::local::stream_protocol::socket socket_;
  FrameDecoder decoder_;
  FrameWriter writer_;
  std::unordered_map<std::uint64_t, InFlight> calls_;
  std::uint64_t next_call_id_ = 1;
  bool closed_ = false;
  bool close_when_idle_ = false;
  bool linger_over_ = false;
  std::optional<boost::asio::steady_timer> linger_;
  bool waiting_readable_ = false;
  bool paused_ = false;     // over a back-pressure limit: not reading until below half
  bool suspended_ = false;  // a live upgrade stopped reading
};

}  // namespace shim::ttrpc
