#include "support/ttrpc_harness.h"

#include <stdexcept>

#include "shim/pb/ttrpc.pb.h"

namespace shim::test {

TtrpcServerHarness::TtrpcServerHarness(ttrpc::Router router, ttrpc::ServerOptions options)
    : dir_("ttrpc-"), socket_path_(dir_.sub("s.sock")) {
  server_ = std::make_unique<ttrpc::TtrpcServer>(io_.executor(), std::move(router), options);
  Status status = server_->serve_path(socket_path_);
  if (!status.ok()) throw std::runtime_error("serve_path: " + status.to_string());
}

TtrpcServerHarness::~TtrpcServerHarness() {
  server_.reset();  // posts close()
  io_.drain();
}

SyncClient::SyncClient(const std::string& address)
    : client_(ttrpc::TtrpcClient::create(io_.executor())) {
  std::promise<Status> connected;
  auto result = connected.get_future();
  client_->connect(address, [&connected](Status status) { connected.set_value(status); });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    throw std::runtime_error("connect timed out");
  }
  Status status = result.get();
  if (!status.ok()) throw std::runtime_error("connect: " + status.to_string());
}

SyncClient::~SyncClient() {
  client_.reset();  // posts close()
  io_.drain();
}

std::future<CallResult> SyncClient::call_async(std::string service, std::string method,
                                               std::string payload, ttrpc::CallOptions options) {
  auto promise = std::make_shared<std::promise<CallResult>>();
  auto result = promise->get_future();
  client_->call(std::move(service), std::move(method), std::move(payload), std::move(options),
                [promise](Status status, std::string reply) {
                  promise->set_value(CallResult{std::move(status), std::move(reply)});
                });
  return result;
}

CallResult SyncClient::call(std::string service, std::string method, std::string payload,
                            ttrpc::CallOptions options, std::chrono::milliseconds timeout) {
  auto result = call_async(std::move(service), std::move(method), std::move(payload),
                           std::move(options));
  if (result.wait_for(timeout) != std::future_status::ready) {
    throw std::runtime_error("ttrpc call timed out");
  }
  return result.get();
}

std::string request_frame_bytes(std::uint32_t stream_id, const std::string& service,
                                const std::string& method, const std::string& payload,
                                std::int64_t timeout_nano, const ttrpc::Metadata& metadata) {
  ::shim::pb::ttrpc::Request request;
  request.set_service(service);
  request.set_method(method);
  request.set_payload(payload);
  request.set_timeout_nano(timeout_nano);
  for (const auto& [key, value] : metadata) {
    auto* pair = request.add_metadata();
    pair->set_key(key);
    pair->set_value(value);
  }
  std::string frame;
  ttrpc::append_frame(frame, stream_id, ttrpc::FrameType::kRequest, request.SerializeAsString());
  return frame;
}

std::optional<RawFrame> read_frame(UnixStream& stream, std::chrono::milliseconds timeout) {
  auto header = stream.read_exact(ttrpc::kHeaderSize, timeout);
  if (!header) return std::nullopt;
  RawFrame frame;
  frame.header = ttrpc::decode_header(header->data());
  auto payload = stream.read_exact(frame.header.length, timeout);
  if (!payload) return std::nullopt;
  frame.payload = std::move(*payload);
  return frame;
}

CallResult decode_response(const std::string& message) {
  ::shim::pb::ttrpc::Response response;
  if (!response.ParseFromString(message)) {
    return CallResult{Status(Code::kDataLoss, "test: response does not parse"), {}};
  }
  CallResult result;
  if (response.has_status()) {
    result.status = Status(static_cast<Code>(response.status().code()), response.status().message());
  }
  result.payload = response.payload();
  return result;
}

}  // namespace shim::test
