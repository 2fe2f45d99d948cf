#include "shim/runtime_manager.h"

#include <signal.h>

#include "common/vendor_call.h"
#include "shim/linux/mount.h"
#include "shim/logger.h"
#include "shim/clock.h"
#include "shim/timestamp.h"
#include "task/runtime_task_service.h"

namespace shim {

Status RuntimeManager::cleanup(const ActionContext&, std::int64_t* init_pid) {
  *init_pid = -1;
  return {};
}

// The `delete` action as containerd's shims answer it: the runtime's clean-up, the rootfs
// unmounted (best effort, logged), and "killed by SIGKILL, now". A failed clean-up is
// logged and fails the action, but only after the unmount: nothing of it is skipped.
Status RuntimeManager::stop(const ActionContext& context, task::DeleteResponse* response) {
  std::int64_t pid = -1;
  Status cleaned = vendor_call("RuntimeManager::cleanup", [&] { return cleanup(context, &pid); },
                               &context.logger, context.identity.id);
  if (!cleaned.ok()) context.logger.error("runtime clean-up failed", {{"error", cleaned.message()}});
  if (Status s = unmount_all(rootfs_path(context.identity.bundle)); !s.ok()) {
    context.logger.warn("failed to cleanup rootfs mount", {{"error", s.message()}});
  }
  if (!cleaned.ok()) return cleaned;
  response->set_pid(static_cast<std::uint32_t>(pid));  // -1 -> 4294967295, as Go's uint32(-1)
  response->set_exit_status(128 + SIGKILL);
  *response->mutable_exited_at() = to_timestamp(context.clock.now());
  return {};
}

std::unique_ptr<TaskService> RuntimeManager::create_task_service(ServiceContext& context) {
  std::unique_ptr<Runtime> runtime;
  Status made = vendor_call("RuntimeManager::create_runtime", [&] {
    runtime = create_runtime(context);
    return runtime != nullptr ? Status() : Status(Code::kInternal, "RuntimeManager::create_runtime made no runtime");
  });
  if (!made.ok()) throw StatusError(made);  // the daemon's guard around this method reports it
  return std::make_unique<RuntimeTaskService>(context, std::move(runtime));
}

}  // namespace shim
