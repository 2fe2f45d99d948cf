// The shim binary's actions, dispatched by shim::run (run.cpp). Private to libshim.
#pragma once

#include <string>

#include "protocol/flags.h"
#include "protocol/shim_env.h"
#include "shim/manager.h"

namespace shim::detail {

int run_start(const ShimFlags& flags, const ShimEnv& env, Manager& manager);
int run_delete(const ShimFlags& flags, const ShimEnv& env, Manager& manager);
int run_info(const ShimFlags& flags, const ShimEnv& env, Manager& manager);
int run_serve(const ShimFlags& flags, const ShimEnv& env, Manager& manager);
// `upgrade`: asks the running shim of -id to replace itself with this binary
// (docs/live-upgrade.md).
int run_upgrade(const ShimFlags& flags, const ShimEnv& env, Manager& manager);
// `upgrade-all`: the same for every running shim of this binary's name and -address.
int run_upgrade_all(const ShimFlags& flags, const ShimEnv& env, Manager& manager);

// Reads all of fd 0 up to `limit` bytes (the rest is drained and ignored).
std::string read_stdin(std::size_t limit);
// Writes all of `bytes` to fd; false on error.
bool write_fd(int fd, std::string_view bytes);
// "<runtime name>: <message>" on stderr without a newline, as the Go shims print
// failures (containerd shows the combined output as the error).
int fail(const Manager& manager, const Status& status);
// manager.name(), or "shim" if it throws.
std::string manager_name(const Manager& manager) noexcept;
// manager.daemon_options(context), guarded (common/vendor_call.h).
Status daemon_options_of(const Manager& manager, const StartContext& context,
                         DaemonOptions* options);
std::string current_dir();

}  // namespace shim::detail
