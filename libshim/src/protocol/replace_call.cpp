#include "protocol/replace_call.h"

#include <chrono>

#include <boost/asio/io_context.hpp>

#include "shim/ttrpc/client.h"
#include "upgrade/live_upgrade.h"

namespace shim::detail {
namespace {

// A whole upgrade (probe, quiesce, exec, restore) takes well under a second; the probe
// alone may take up to 5 s (upgrade::kProbeTimeout).
constexpr std::chrono::seconds kUpgradeCallTimeout{30};

}  // namespace

Status call_replace(const std::string& address, const std::string& binary,
                    pb::upgrade::ReplaceResponse* response) {
  boost::asio::io_context io(1);
  auto client = ttrpc::TtrpcClient::create(io.get_executor());
  Status result(Code::kUnknown, "no answer");
  client->connect(address, [&](Status connected) {
    if (!connected.ok()) {
      result = connected;
      return;
    }
    pb::upgrade::ReplaceRequest request;
    request.set_binary(binary);
    ttrpc::CallOptions options;
    options.timeout = kUpgradeCallTimeout;
    client->call(std::string(upgrade::kUpgradeService), std::string(upgrade::kReplaceMethod),
                 request.SerializeAsString(), std::move(options),
                 [&](Status status, std::string payload) {
                   result = status;
                   if (status.ok() && !response->ParseFromString(payload)) {
                     result = Status(Code::kInternal, "the answer is no ReplaceResponse");
                   }
                   client->close();
                 });
  });
  io.run();
  return result;
}

}  // namespace shim::detail
