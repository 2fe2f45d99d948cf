// Test harness for ttrpc: a server on its own io thread listening in a temp dir, and a
// client on another io thread with blocking calls.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "shim/status.h"
#include "shim/ttrpc/client.h"
#include "shim/ttrpc/router.h"
#include "ttrpc/server.h"
#include "ttrpc/frame.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"
#include "support/unix_stream.h"

namespace shim::test {

struct CallResult {
  Status status;
  std::string payload;
};

class TtrpcServerHarness {
 public:
  explicit TtrpcServerHarness(ttrpc::Router router, ttrpc::ServerOptions options = {});
  // Closes the server on its thread before the thread stops.
  ~TtrpcServerHarness();

  const std::string& socket_path() const { return socket_path_; }
  ttrpc::TtrpcServer& server() { return *server_; }
  IoThread& io() { return io_; }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  IoThread io_;
  std::string socket_path_;
  std::unique_ptr<ttrpc::TtrpcServer> server_;
};

class SyncClient {
 public:
  // Connects to `address` ("/path" or "unix:///path"); throws if that fails.
  explicit SyncClient(const std::string& address);
  ~SyncClient();

  std::future<CallResult> call_async(std::string service, std::string method,
                                     std::string payload, ttrpc::CallOptions options = {});
  // Throws if no answer arrives within `timeout`.
  CallResult call(std::string service, std::string method, std::string payload = {},
                  ttrpc::CallOptions options = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(10));

  ttrpc::TtrpcClient& client() { return *client_; }
  IoThread& io() { return io_; }

 private:
  IoThread io_;
  std::shared_ptr<ttrpc::TtrpcClient> client_;
};

// Polls `predicate` every millisecond until it holds or `timeout` passes.
template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Raw frames, for tests that speak ttrpc by hand. Encoded with the generated protobuf
// classes, independently of libshim's own encoder.
std::string request_frame_bytes(std::uint32_t stream_id, const std::string& service,
                                const std::string& method, const std::string& payload = {},
                                std::int64_t timeout_nano = 0,
                                const ttrpc::Metadata& metadata = {});

struct RawFrame {
  ttrpc::FrameHeader header;
  std::string payload;
};

// The next whole frame, or nullopt on EOF or timeout.
std::optional<RawFrame> read_frame(UnixStream& stream,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(5));

// Decodes a Response message: its status (OK when absent) and payload.
CallResult decode_response(const std::string& message);

}  // namespace shim::test
