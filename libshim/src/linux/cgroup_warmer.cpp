#include "linux/cgroup_warmer.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "shim/fs.h"
#include "shim/linux/cgroup.h"

namespace shim {
namespace {

constexpr std::chrono::milliseconds kStillWarm{10};

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CgroupMigrationWarmer::CgroupMigrationWarmer(WorkPool& pool) : pool_(pool) {}

std::string CgroupMigrationWarmer::own_procs_file(const std::string& proc_cgroup,
                                                  const std::string& root) {
  ProcCgroup parsed;
  if (!parse_proc_cgroup(proc_cgroup, &parsed).ok()) return "";
  if (host_cgroup_version(root) == CgroupVersion::kV2) {
    return parsed.has_unified ? fmt::format("{}{}/cgroup.procs", root, parsed.unified) : "";
  }
  for (const char* controller : {"pids", "memory", "cpu"}) {
    auto it = parsed.controllers.find(controller);
    if (it != parsed.controllers.end()) {
      return fmt::format("{}/{}{}/cgroup.procs", root, controller, it->second);
    }
  }
  return "";
}

void CgroupMigrationWarmer::warm() {
  std::int64_t ended = state_->ended_ns.load();
  if (ended != 0 && steady_ns() - ended < std::chrono::nanoseconds(kStillWarm).count()) return;
  if (state_->busy.exchange(true)) return;
  bool posted = pool_.post_brief([state = state_] {
    if (!state->looked) {  // one job at a time (busy), so no race on these two
      std::string text;
      if (read_file("/proc/self/cgroup", &text).ok()) state->procs_file = own_procs_file(text);
      state->looked = true;
    }
    if (!state->procs_file.empty()) {
      int fd = ::open(state->procs_file.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd >= 0) {
        std::string pid = std::to_string(::getpid());
        (void)!::write(fd, pid.data(), pid.size());  // the lock is what we are after
        ::close(fd);
      }
    }
    state->ended_ns = steady_ns();
    state->busy = false;
  });
  if (!posted) state_->busy = false;
}

}  // namespace shim
