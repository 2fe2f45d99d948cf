// The consumer shim's agent over gRPC, in process: a grpc::Server with the Agent service
// and a stub on its in-process channel. The request packs a google.protobuf.StringValue
// into a google.protobuf.Any (full runtime, type URL checked on unpacking), the answer is
// a google.protobuf.Struct turned into JSON through reflection: all of it full protobuf
// and grpc++, in the same process as libshim's lite messages and ttrpc server.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/wrappers.pb.h>
#include <grpcpp/grpcpp.h>

#include "agent.grpc.pb.h"
#include "agent.h"

namespace {

class AgentService final : public consumer::agent::Agent::Service {
  grpc::Status Hello(grpc::ServerContext*, const consumer::agent::HelloRequest* request,
                     google::protobuf::Struct* reply) override {
    google::protobuf::StringValue text;
    if (!request->payload().UnpackTo(&text)) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "payload is not a StringValue"};
    }
    (*reply->mutable_fields())["echo"].set_string_value(text.value());
    return grpc::Status::OK;
  }
};

}  // namespace

std::vector<std::string> consumer::agent_env(const std::string& container_id) {
  AgentService service;
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return {"CONSUMER_AGENT=error: the server did not start"};
  auto stub = consumer::agent::Agent::NewStub(server->InProcessChannel(grpc::ChannelArguments()));

  consumer::agent::HelloRequest request;
  google::protobuf::StringValue text;
  text.set_value(container_id);
  request.mutable_payload()->PackFrom(text);
  google::protobuf::Struct reply;
  grpc::ClientContext context;
  grpc::Status status = stub->Hello(&context, request, &reply);
  server->Shutdown();
  if (!status.ok()) return {"CONSUMER_AGENT=error: " + status.error_message()};
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(reply, &json).ok()) return {"CONSUMER_AGENT=error: json"};
  return {"CONSUMER_AGENT=" + json};
}
