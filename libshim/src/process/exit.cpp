#include "shim/process/exit.h"

#include <sys/wait.h>

namespace shim {

int exit_status_from_wait(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

ProcessExit make_process_exit(pid_t pid, int wait_status,
                              std::chrono::system_clock::time_point exited_at) {
  return ProcessExit{pid, exit_status_from_wait(wait_status), exited_at, wait_status};
}

}  // namespace shim
