// The client side of a live upgrade: one libshim.upgrade.v1.Upgrade/Replace call to a
// running shim (docs/live-upgrade.md), made by the `upgrade` and `upgrade-all` actions.
// Internal.
#pragma once

#include <string>

#include "shim/pb/libshim/upgrade.pb.h"
#include "shim/status.h"

namespace shim::detail {

// Connects to the shim listening at `address` (a path or "unix://<path>"), asks it to
// replace its program with `binary` and waits for the answer on its own event loop (the
// calling thread). The whole swap takes milliseconds; the shim's probe of `binary` may
// take up to 5 s, so the call gives up after 30 s.
[[nodiscard]] Status call_replace(const std::string& address, const std::string& binary,
                                  pb::upgrade::ReplaceResponse* response);

}  // namespace shim::detail
