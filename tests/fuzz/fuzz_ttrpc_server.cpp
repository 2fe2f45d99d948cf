// The ttrpc server connection's dispatch, fed from memory: many frames per input, in
// pieces, with held calls answered, failed or dropped in any order between them.
// ServerConnection::receive() is what a socket read does with its bytes; the replies go
// to the other end of a socketpair, which is read back and checked:
//  - every frame the server must answer (a request, an oversized frame, an even stream
//    id) gets exactly one reply on its stream id, and nothing else is sent;
//  - every reply is a Response frame (type 2, no flags) within the size limit;
//  - after close_when_idle() the connection closes once everything was answered.
// Handlers: the task API (v2 and v3 names, typed decoding of every request) and a test
// service that echoes, holds, throws, drops and answers twice.
//
// Input: a sequence of ops. A byte b < 0x80 feeds the next b + 1 bytes to the connection
// (so a frame arrives in pieces, as reads cut it); 0x80|k answers held call k, 0xa0|k
// fails it, 0xc0|k drops it (the server then answers Internal); 0xfe ends the input with
// close_when_idle(), 0xff with close(); other bytes do nothing.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>

#include "fuzz_check.h"
#include "shim/task_service.h"
#include "ttrpc/frame.h"
#include "ttrpc/server_connection.h"

namespace {

namespace asio = boost::asio;
using namespace shim::ttrpc;

// Small, so that oversized requests and replies (an echo of a big payload) occur in
// small inputs.
constexpr std::uint32_t kLimit = 2048;
constexpr std::size_t kMaxHeld = 64;

// Calls whose handler kept the responder; the input's ops answer them.
struct HeldCalls {
  std::vector<Responder> calls;

  void add(Responder responder) {
    // Beyond the bound the oldest is dropped: its last copy gone, the server answers it.
    if (calls.size() >= kMaxHeld) calls.erase(calls.begin());
    calls.push_back(std::move(responder));
  }
};

// Every task RPC is decoded by the typed adapters; State answers with what it got, Wait
// is held (as a real Wait is until the exit), the rest answer Unimplemented.
class FuzzTaskService final : public shim::TaskService {
 public:
  explicit FuzzTaskService(HeldCalls& held) : held_(held) {}

  void state(const CallInfo&, shim::task::StateRequest request,
             Reply<shim::task::StateResponse> reply) override {
    shim::task::StateResponse response;
    response.set_id(request.id());
    response.set_exec_id(request.exec_id());
    reply(response);
  }
  void wait(const CallInfo&, shim::task::WaitRequest,
            Reply<shim::task::WaitResponse> reply) override {
    held_.add(reply.responder());
  }

 private:
  HeldCalls& held_;
};

Router make_router(HeldCalls& held, FuzzTaskService& tasks) {
  Router router;
  shim::register_task_service(router, tasks);
  router.add("fuzz.S", "Echo", [](const CallInfo&, std::string_view payload, Responder r) {
    r.reply(std::string(payload));
  });
  router.add("fuzz.S", "Meta", [](const CallInfo& call, std::string_view, Responder r) {
    std::string out = call.deadline ? "deadline" : "none";
    for (const auto& [key, value] : call.metadata) out += ";" + key + "=" + value;
    r.reply(out);
  });
  router.add("fuzz.S", "Hold",
             [&held](const CallInfo&, std::string_view, Responder r) { held.add(std::move(r)); });
  router.add("fuzz.S", "Throw", [](const CallInfo&, std::string_view, Responder) {
    throw std::runtime_error("thrown");
  });
  router.add("fuzz.S", "Status", [](const CallInfo&, std::string_view, Responder) {
    throw shim::StatusError(shim::not_found("thing"));
  });
  router.add("fuzz.S", "Drop", [](const CallInfo&, std::string_view, Responder) {});
  router.add("fuzz.S", "Twice", [](const CallInfo&, std::string_view, Responder r) {
    r.reply("first");
    r.fail(shim::not_found("second"));
    throw std::runtime_error("third");
  });
  return router;
}

// The stream ids the server must answer once each, from the bytes it was fed.
std::multiset<std::uint32_t> must_answer(std::string_view fed) {
  std::multiset<std::uint32_t> ids;
  FrameDecoder decoder(kLimit);
  decoder.feed(fed);
  while (auto frame = decoder.next()) {
    const FrameHeader& header = frame->header;
    bool request = header.type == static_cast<std::uint8_t>(FrameType::kRequest);
    if (frame->oversized || header.stream_id % 2 == 0 || request) ids.insert(header.stream_id);
  }
  return ids;
}

class Session {
 public:
  Session()
      : tasks_(held_),
        // No linger: the peer here never closes first (its end is not read by a running
        // loop), so a graceful close must come as soon as the connection is idle.
        context_(std::make_shared<ServerContext>(
            io_.get_executor(), make_router(held_, tasks_),
            ServerOptions{.max_message_size = kLimit,
                          .shutdown_linger = std::chrono::milliseconds(0)})) {
    asio::local::stream_protocol::socket server_end(io_);
    asio::local::connect_pair(server_end, peer_);
    peer_.non_blocking(true);
    // No TtrpcServer: the connection works without one (remove() is then skipped).
    connection_ = std::make_shared<ServerConnection>(context_, std::weak_ptr<TtrpcServer::Impl>(),
                                                     std::move(server_end));
  }

  ~Session() {
    on_executor([this] {
      held_.calls.clear();
      connection_->close();
    });
  }

  void run(std::string_view input) {
    bool graceful = false;
    while (!input.empty()) {
      auto op = static_cast<std::uint8_t>(input.front());
      input.remove_prefix(1);
      if (op < 0x80) {
        std::string_view bytes = input.substr(0, std::min<std::size_t>(op + 1u, input.size()));
        input.remove_prefix(bytes.size());
        fed_.append(bytes);
        on_executor([this, bytes] { connection_->receive(bytes); });
      } else if (op == 0xfe) {
        on_executor([this] { connection_->close_when_idle(); });
        graceful = true;
        break;
      } else if (op == 0xff) {
        on_executor([this] { connection_->close(); });
        return;  // pending calls are forgotten: no reply is owed any more
      } else if (op < 0xe0) {
        on_executor([this, op] { answer_held(op); });
      }
    }
    on_executor([this] {
      for (const Responder& responder : held_.calls) responder.reply("late");
      held_.calls.clear();
    });
    check_replies();
    if (graceful) FUZZ_CHECK(peer_closed_);
  }

 private:
  void answer_held(std::uint8_t op) {
    if (held_.calls.empty()) return;
    std::size_t index = (op & 0x1f) % held_.calls.size();
    switch (op & 0xe0) {
      case 0x80:
        held_.calls[index].reply("held");
        break;
      case 0xa0:
        held_.calls[index].fail(shim::not_found("held"));
        break;
      default:
        held_.calls.erase(held_.calls.begin() + static_cast<std::ptrdiff_t>(index));
        break;
    }
  }

  // Runs `fn` on the executor as the server's own work runs, then lets everything it
  // started finish: replies written, timers that are due fired, the peer drained.
  void on_executor(std::function<void()> fn) {
    asio::post(io_, std::move(fn));
    for (;;) {
      std::size_t ran = io_.poll();
      std::size_t read = drain();
      if (ran == 0 && read == 0) break;
      io_.restart();
    }
    io_.restart();
  }

  std::size_t drain() {
    std::size_t total = 0;
    char buffer[16 * 1024];
    for (;;) {
      boost::system::error_code error;
      std::size_t size = peer_.read_some(asio::buffer(buffer), error);
      if (error == asio::error::would_block) return total;
      if (error) {
        peer_closed_ = true;
        return total;
      }
      total += size;
      replies_.feed(std::string_view(buffer, size));
      while (auto frame = replies_.next()) {
        FUZZ_CHECK(!frame->oversized);
        FUZZ_CHECK(frame->header.type == static_cast<std::uint8_t>(FrameType::kResponse));
        FUZZ_CHECK(frame->header.flags == 0);
        FUZZ_CHECK(frame->payload.size() <= kLimit);
        answered_.insert(frame->header.stream_id);
      }
    }
  }

  void check_replies() {
    FUZZ_CHECK(!replies_.mid_frame());
    FUZZ_CHECK(answered_ == must_answer(fed_));
  }

  asio::io_context io_;
  HeldCalls held_;
  FuzzTaskService tasks_;
  std::shared_ptr<ServerContext> context_;
  asio::local::stream_protocol::socket peer_{io_};
  std::shared_ptr<ServerConnection> connection_;
  std::string fed_;
  FrameDecoder replies_{kMaxMessageSize};
  std::multiset<std::uint32_t> answered_;
  bool peer_closed_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Typed decoding of a request with bad UTF-8 makes libprotobuf log each time; the shim
  // sends that to its log, here it would only slow the run down.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Session session;
  session.run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
