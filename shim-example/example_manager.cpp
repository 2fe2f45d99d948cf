#include "example_manager.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>

#include "example_service.h"
#include "shim/fs.h"

namespace example {

// containerd runs `delete` after every task removal and when a shim died. If the shim
// died, the container's process may still run: kill it, then report it killed (137).
shim::Status ExampleManager::stop(const shim::StopContext& context,
                                  shim::task::DeleteResponse* response) {
  std::string pid_text;
  int pid = -1;
  if (shim::read_file(context.bundle + "/init.pid", &pid_text).ok()) pid = std::atoi(pid_text.c_str());
  if (pid > 0) ::kill(pid, SIGKILL);
  auto now = std::chrono::system_clock::now().time_since_epoch();
  response->set_pid(static_cast<std::uint32_t>(pid));
  response->set_exit_status(128 + SIGKILL);
  response->mutable_exited_at()->set_seconds(std::chrono::duration_cast<std::chrono::seconds>(now).count());
  return {};
}

std::unique_ptr<shim::TaskService> ExampleManager::create_task_service(shim::ServiceContext& context) {
  return std::make_unique<ExampleService>(context);
}

}  // namespace example
