// Typed adapters: register protobuf-typed handlers on a Router in one line each.
#pragma once

#include <string>
#include <utility>

#include "shim/status.h"
#include "shim/ttrpc/call.h"

namespace shim::ttrpc {

// Answers a call with a typed response message.
template <class Response>
class Reply {
 public:
  // Answers through `responder`.
  explicit Reply(Responder responder) : responder_(std::move(responder)) {}

  // Answers with `response` (status OK).
  void operator()(const Response& response) const {
    responder_.reply(response.SerializeAsString());
  }
  // Answers with an error status.
  void fail(Status status) const { responder_.fail(std::move(status)); }
  // Whether the call was answered already.
  bool done() const { return responder_.done(); }
  // The untyped responder underneath.
  const Responder& responder() const { return responder_; }

 private:
  Responder responder_;
};

// Wraps fn(const CallInfo&, Request, Reply<Response>) as a Handler. A payload that does
// not decode as Request is answered Internal "ttrpc: error unmarshalling payload".
template <class Request, class Response, class Fn>
Handler typed_handler(Fn fn) {
  return [fn = std::move(fn)](const CallInfo& call, std::string_view payload,
                              Responder responder) {
    Request request;
    if (!request.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
      responder.fail(Status(Code::kInternal, "ttrpc: error unmarshalling payload"));
      return;
    }
    fn(call, std::move(request), Reply<Response>(std::move(responder)));
  };
}

}  // namespace shim::ttrpc
