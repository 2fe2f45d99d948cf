#include "shim/runtime_manager.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>

#include "shim/linux/mount.h"
#include "shim/logger.h"
#include "shim/clock.h"
#include "shim/timestamp.h"
#include "task/runtime_task_service.h"

namespace shim {

Status RuntimeManager::cleanup(const StopContext&, std::int64_t* init_pid) {
  *init_pid = -1;
  return {};
}

// The `delete` action as containerd's shims answer it: the runtime's clean-up, the rootfs
// unmounted (best effort, logged), and "killed by SIGKILL, now".
Status RuntimeManager::stop(const StopContext& context, task::DeleteResponse* response) {
  std::int64_t pid = -1;
  if (Status s = cleanup(context, &pid); !s.ok()) return s;
  if (Status s = unmount_all(rootfs_path(context.bundle)); !s.ok()) {
    SystemClock clock;
    Logger logger(std::make_shared<FdLogSink>(STDERR_FILENO), clock);
    logger.warn("failed to cleanup rootfs mount", {{"error", s.message()}});
  }
  response->set_pid(static_cast<std::uint32_t>(pid));  // -1 -> 4294967295, as Go's uint32(-1)
  response->set_exit_status(128 + SIGKILL);
  *response->mutable_exited_at() = to_timestamp(std::chrono::system_clock::now());
  return {};
}

std::unique_ptr<TaskService> RuntimeManager::create_task_service(ServiceContext& context) {
  return std::make_unique<RuntimeTaskService>(context, create_runtime(context));
}

}  // namespace shim
