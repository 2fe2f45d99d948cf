// The `delete` action: the plug-in's cleanup after a task whose shim may be gone, then
// only a containerd.task.v2.DeleteResponse on stdout (containerd decodes it with the v2
// message in every release). Warnings go to stderr, which containerd logs.
#include <unistd.h>

#include "protocol/actions.h"

namespace shim::detail {

int run_delete(const ShimFlags& flags, const ShimEnv& env, Manager& manager) {
  StopContext context;
  context.id = flags.id;
  context.ns = !flags.ns.empty() ? flags.ns : env.ns;
  context.bundle = !flags.bundle.empty() ? flags.bundle : current_dir();
  context.grpc_address = !flags.address.empty() ? flags.address : env.grpc_address;
  context.debug = flags.debug;
  if (context.ns.empty()) return fail(manager, Status(Code::kInvalidArgument, "shim namespace cannot be empty"));

  task::DeleteResponse response;
  if (Status status = manager.stop(context, &response); !status.ok()) return fail(manager, status);
  return write_fd(STDOUT_FILENO, response.SerializeAsString()) ? 0 : 1;
}

}  // namespace shim::detail
