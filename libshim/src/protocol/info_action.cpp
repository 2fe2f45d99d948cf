// The -info action (containerd 2.x): runtime options Any on stdin (or nothing), a
// containerd.types.RuntimeInfo on stdout.
#include <unistd.h>

#include "protocol/actions.h"

namespace shim::detail {

int run_info(Manager& manager) {
  std::string bytes = read_stdin(std::size_t{10} << 20);
  std::optional<shim::pb::Any> options;
  if (!bytes.empty()) {
    shim::pb::Any any;
    if (any.ParseFromString(bytes) && !any.type_url().empty()) options = std::move(any);
  }
  containerd::types::RuntimeInfo info;
  if (Status status = manager.info(options, &info); !status.ok()) return fail(manager, status);
  return write_fd(STDOUT_FILENO, info.SerializeAsString()) ? 0 : 1;
}

}  // namespace shim::detail
