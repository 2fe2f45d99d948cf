// The `upgrade-all` action (docs/live-upgrade.md): every shim of a runtime on this node in
// one command,
//   <new binary> -address ADDR [-namespace NS] upgrade-all
// Finds the daemons started under this binary's file name for the containerd at ADDR
// (protocol/running_shims.h), in every namespace or in NS, and asks each in turn to
// replace its program with this binary, as `upgrade` does for one. One line per shim on
// stdout, then a count; exit 0 when every shim found runs this binary afterwards, 1
// otherwise (a shim that refused serves on with its old program).
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "protocol/actions.h"
#include "protocol/replace_call.h"
#include "protocol/running_shims.h"
#include "socket/socket_address.h"
#include "upgrade/upgrade_support.h"

namespace shim::detail {
namespace {

struct Tally {
  int upgraded = 0;
  int current = 0;
  int failed = 0;
};

// Upgrades one shim; its line.
std::string upgrade_one(const RunningShim& shim, const std::string& grpc, const std::string& binary,
                        Tally& tally) {
  const std::string who =
      fmt::format("shim pid {} (namespace {}, id {})", shim.pid, shim.ns, shim.id);
  if (shim.exe == binary) {
    ++tally.current;
    return fmt::format("{} already runs {}\n", who, binary);
  }
  std::string socket;
  Status status = socket_address(grpc, shim.ns, shim.id, &socket);
  pb::upgrade::ReplaceResponse response;
  if (status.ok()) status = call_replace(socket, binary, &response);
  if (!status.ok()) {
    ++tally.failed;
    return fmt::format("{} not upgraded, serves on with {}: {}\n", who, shim.exe, status.message());
  }
  ++tally.upgraded;
  return fmt::format("{} now runs {} ({}); swap {:.1f} ms\n", who, response.binary(),
                     response.version(), static_cast<double>(response.swap_micros()) / 1000.0);
}

}  // namespace

int run_upgrade_all(const ShimFlags& flags, const ShimEnv& env, Manager& manager) {
  const std::string& grpc = !flags.address.empty() ? flags.address : env.grpc_address;
  if (grpc.empty()) {
    return fail(manager, Status(Code::kInvalidArgument,
                                "upgrade-all needs -address: the containerd socket its shims "
                                "were started for (e.g. /run/containerd/containerd.sock)"));
  }
  const std::string binary = upgrade::self_exe();
  ShimQuery query{.program_name = std::filesystem::path(binary).filename().string(),
                  .grpc_address = grpc,
                  .ns = flags.ns};
  Tally tally;
  for (const RunningShim& shim : find_running_shims(query)) {
    if (!write_fd(STDOUT_FILENO, upgrade_one(shim, grpc, binary, tally))) return 1;
  }
  std::string summary =
      fmt::format("upgrade-all: {} upgraded, {} already running {}, {} not upgraded\n",
                  tally.upgraded, tally.current, binary, tally.failed);
  if (!write_fd(STDOUT_FILENO, summary)) return 1;
  return tally.failed == 0 ? 0 : 1;
}

}  // namespace shim::detail
