// The `upgrade` action (docs/live-upgrade.md):
//   <new binary> -namespace NS -id ID -address ADDR upgrade
// finds the running shim that serves ID (its socket, computed as `start` does; -socket
// names it directly) and asks it to replace itself with this binary. Exit 0 with one
// line on stdout once the new program serves; 1 with the reason on stderr otherwise (the
// old program then serves on).
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include "protocol/actions.h"
#include "shim/pb/libshim/upgrade.pb.h"
#include "shim/ttrpc/client.h"
#include "socket/socket_address.h"
#include "upgrade/live_upgrade.h"
#include "upgrade/upgrade_support.h"

namespace shim::detail {
namespace {

// A whole upgrade (probe, quiesce, exec, restore) takes well under a second; the probe
// alone may take up to 5 s (upgrade::kProbeTimeout).
constexpr std::chrono::seconds kUpgradeCallTimeout{30};

Status shim_socket(const ShimFlags& flags, const ShimEnv& env, std::string* address) {
  if (!flags.socket.empty()) {
    *address = flags.socket;
    return {};
  }
  if (flags.id.empty()) {
    return Status(Code::kInvalidArgument,
                  "upgrade needs -id: the container's id, or its pod's sandbox id when the "
                  "pod's containers share one shim");
  }
  const std::string& grpc = !flags.address.empty() ? flags.address : env.grpc_address;
  const std::string& ns = !flags.ns.empty() ? flags.ns : env.ns;
  return socket_address(grpc, ns, flags.id, address);
}

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

}  // namespace

int run_upgrade(const ShimFlags& flags, const ShimEnv& env, Manager& manager) {
  std::string address;
  if (Status s = shim_socket(flags, env, &address); !s.ok()) return fail(manager, s);
  const std::string binary = upgrade::self_exe();
  pb::upgrade::ReplaceResponse response;
  Status replaced = call_replace(address, binary, &response);
  if (!replaced.ok()) {
    return fail(manager, Status(replaced.code(), fmt::format("upgrade the shim at {}: {}", address,
                                                             replaced.message())));
  }
  std::string line = fmt::format("shim pid {} now runs {} ({}); swap {:.1f} ms\n", response.pid(),
                                 response.binary(), response.version(),
                                 static_cast<double>(response.swap_micros()) / 1000.0);
  return write_fd(STDOUT_FILENO, line) ? 0 : 1;
}

}  // namespace shim::detail
