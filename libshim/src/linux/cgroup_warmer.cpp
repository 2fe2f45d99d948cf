#include "linux/cgroup_warmer.h"

#include <fcntl.h>
#include <unistd.h>

#include <string_view>
#include <vector>

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

std::string CgroupMigrationWarmer::member_procs_file(const CgroupFs& fs, CgroupVersion version,
                                                     int pid) {
  CgroupPaths paths;
  if (!load_cgroup(fs, version, pid, &paths).ok()) return "";
  std::vector<std::string> dirs;
  if (version == CgroupVersion::kV2) {
    std::string type;
    // A threaded cgroup's cgroup.procs would pull every thread into the leader's.
    if (read_file(paths.unified + "/cgroup.type", &type).ok() && type.starts_with("threaded")) {
      return "";
    }
    dirs = {paths.unified};
  } else {
    dirs = {paths.dir("pids"), paths.dir("memory"), paths.dir("cpu")};
  }
  const std::string me = std::to_string(pid);
  for (const std::string& dir : dirs) {
    std::string procs;
    if (dir.empty() || !read_file(dir + "/cgroup.procs", &procs).ok()) continue;
    std::size_t at = 0;
    while (at < procs.size()) {
      std::size_t end = procs.find('\n', at);
      if (end == std::string::npos) end = procs.size();
      if (std::string_view(procs).substr(at, end - at) == me) return dir + "/cgroup.procs";
      at = end + 1;
    }
  }
  return "";
}

void CgroupMigrationWarmer::warm() {
  std::int64_t ended = state_->ended_ns.load();
  if (ended != 0 && steady_ns() - ended < std::chrono::nanoseconds(kStillWarm).count()) return;
  if (state_->busy.exchange(true)) return;
  bool posted = pool_.post_brief([state = state_] {
    struct Done {  // whatever happens, the next warm() may run
      State& state;
      ~Done() {
        state.ended_ns = steady_ns();
        state.busy = false;
      }
    } done{*state};
    const int pid = static_cast<int>(::getpid());
    std::string procs = member_procs_file(CgroupFs{}, host_cgroup_version(), pid);
    if (procs.empty()) return;
    int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    std::string text = std::to_string(pid);
    (void)!::write(fd, text.data(), text.size());  // the lock is what we are after
    ::close(fd);
  });
  if (!posted) state_->busy = false;
}

}  // namespace shim
