#include "shim/ttrpc/call.h"

#include "ttrpc/call_state.h"
#include "ttrpc/wire.h"

namespace shim::ttrpc {

std::string_view CallInfo::metadata_value(std::string_view key) const {
  for (const auto& [name, value] : metadata) {
    if (name == key) return value;
  }
  return {};
}

namespace detail {

CallState::~CallState() {
  if (!claim()) return;
  auto sink = sink_.lock();
  if (!sink) return;
  sink->deliver(call_id_, wire::response_frame(
                              stream_id_, Status(Code::kInternal, "ttrpc: handler dropped the call"), {}));
}

void CallState::complete(const Status& status, std::string_view payload) {
  if (!claim()) return;
  auto sink = sink_.lock();
  if (!sink) return;  // the connection is gone: nobody to answer
  sink->deliver(call_id_, wire::response_frame(stream_id_, status, payload));
}

}  // namespace detail

void Responder::reply(std::string payload) const {
  if (state_) state_->complete(Status(), payload);
}

void Responder::fail(Status status) const {
  if (!state_) return;
  // An OK status would read as success; a failure must say why.
  if (status.ok()) status = Status(Code::kUnknown, "handler failed with an OK status");
  state_->complete(status, {});
}

bool Responder::done() const { return !state_ || state_->done(); }

}  // namespace shim::ttrpc
