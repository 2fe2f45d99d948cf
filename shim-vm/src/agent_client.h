// AgentClient: the shim's typed calls to its guest agent (proto/shim/vm/agent.proto) over
// one ttrpc connection: asynchronous ones for the loop (the stdio relays, the exit
// watches) and blocking ones for the work pool (the Instance methods).
//
// Threading: thread-safe. async() callbacks run on the shim's loop; sync() must not be
// called on the loop (it waits for it).
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "shim/status.h"
#include "shim/ttrpc/client.h"
#include "shim/vm/agent.pb.h"

namespace shim_vm {

namespace agent = libshim::vm::agent::v1;

class AgentClient {
 public:
  static constexpr const char* kService = "libshim.vm.agent.v1.Agent";
  // A call that changes the guest (create, start, exec...) must answer within this.
  static constexpr std::chrono::seconds kCallTimeout{30};

  explicit AgentClient(std::shared_ptr<shim::ttrpc::TtrpcClient> client)
      : client_(std::move(client)) {}

  template <class Response, class Request>
  void async(const char* method, const Request& request,
             std::function<void(shim::Status, Response)> done,
             std::optional<std::chrono::nanoseconds> timeout = std::nullopt) {
    shim::ttrpc::CallOptions options;
    options.timeout = timeout;
    client_->call(kService, method, request.SerializeAsString(), options,
                  [method, done = std::move(done)](shim::Status status, std::string payload) {
                    Response response;
                    if (status.ok() && !response.ParseFromString(payload)) {
                      status = shim::Status(shim::Code::kInternal,
                                            fmt::format("agent {}: a malformed answer", method));
                    }
                    done(std::move(status), std::move(response));
                  });
  }

  // Blocks the calling (pool) thread until the agent answered; errors name the method.
  template <class Response, class Request>
  shim::Status sync(const char* method, const Request& request, Response* response,
                    std::chrono::nanoseconds timeout = kCallTimeout) {
    auto promise = std::make_shared<std::promise<std::pair<shim::Status, Response>>>();
    auto future = promise->get_future();
    async<Response>(
        method, request,
        [promise](shim::Status status, Response r) {
          promise->set_value({std::move(status), std::move(r)});
        },
        timeout);
    auto [status, r] = future.get();
    if (!status.ok()) {
      return shim::Status(status.code(), fmt::format("agent {}: {}", method, status.message()));
    }
    if (response != nullptr) *response = std::move(r);
    return {};
  }

  bool connected() const { return client_->connected(); }
  void close() { client_->close(); }
  void on_close(std::function<void(shim::Status)> callback) {
    client_->on_close(std::move(callback));
  }

 private:
  std::shared_ptr<shim::ttrpc::TtrpcClient> client_;
};

}  // namespace shim_vm
