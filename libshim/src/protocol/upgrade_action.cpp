// The `upgrade` action (docs/live-upgrade.md):
//   <new binary> -namespace NS -id ID -address ADDR upgrade
// finds the running shim that serves ID (its socket, computed as `start` does; -socket
// names it directly) and asks it to replace itself with this binary. Exit 0 with one
// line on stdout once the new program serves; 1 with the reason on stderr otherwise (the
// old program then serves on).
#include <unistd.h>

#include <fmt/format.h>

#include "protocol/actions.h"
#include "protocol/replace_call.h"
#include "socket/socket_address.h"
#include "upgrade/upgrade_support.h"

namespace shim::detail {
namespace {

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
