#include "shim-runc/runc_manager.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "shim-runc/go_compat.h"
#include "shim-runc/mount.h"
#include "shim-runc/options.h"
#include "shim-runc/runc_client.h"
#include "shim-runc/runc_command.h"
#include "shim-runc/runc_service.h"
#include "shim/action_environment.h"
#include "shim/clock.h"
#include "shim/fs.h"
#include "shim/logger.h"
#include "shim/timestamp.h"

namespace runc_shim {

namespace {

// runc keeps a container's state in <root>/<namespace>/<id>. Without that dir,
// `runc delete --force` only reports success (runc 1.1: "does not exist" with --force is
// not an error), and after a normal Delete it is gone: skipping runc then saves a
// fork/exec of ~5 ms on `ctr run --rm`'s critical path. Other runtimes (crun, runsc...)
// may keep their state elsewhere: they are always called, as is runc if lstat fails for
// any other reason.
bool runc_has_no_state(const RuncCommandLine& command_line, const std::string& id) {
  std::string binary = command_line.binary();
  if (binary != "runc" && !binary.ends_with("/runc")) return false;
  if (id.empty() || id == "." || id == ".." || id.find('/') != std::string::npos) return false;
  struct stat st;
  std::string dir = go_join_path(command_line.state_root(), id);
  return ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT;
}

// `runc delete --force ID`, best effort: containerd logs our stderr as "cleanup warnings".
void force_delete(const RuncConfig& config, const std::string& id, shim::Logger& logger) {
  shim::ActionEnvironment environment;
  RuncClient runc(environment.reaper(), environment.spawner(), config,
                  RuncClientOptions{.timeout = std::chrono::seconds(10)});
  if (auto s = runc.remove(id, true); !s.ok()) {
    logger.warn("failed to remove runc container", {{"error", s.message()}});
  }
}

}  // namespace

shim::DaemonOptions RuncManager::daemon_options(const shim::StartContext& context) const {
  shim::DaemonOptions options;
  if (!context.options) return options;
  DecodedOptions decoded;
  // An unreadable or foreign Any only means "no shim cgroup": start never fails on it.
  if (decode_runc_options(*context.options, &decoded).ok()) {
    options.cgroup = decoded.options.shim_cgroup();
  }
  return options;
}

// The `delete` action, as the Go shim: the bundle is <dir of cwd>/<id>; runc's binary
// and root come from the files Create left there; runc delete --force (skipped when runc
// has no state for the container) and the rootfs unmount are best effort; the answer
// says the init was killed (137) now.
shim::Status RuncManager::stop(const shim::StopContext& context, shim::task::DeleteResponse* response) {
  std::string bundle = context.bundle;
  std::string binary;
  if (auto s = read_runtime(bundle, &binary); !s.ok()) return s;
  RuncOptions options;
  bool present = false;
  if (auto s = read_options(bundle, &options, &present); !s.ok()) return s;

  RuncCommandLine command_line(RuncConfig{binary, runc_root(options), context.namespace_, bundle, false});
  shim::SystemClock clock;
  shim::Logger logger(std::make_shared<shim::FdLogSink>(STDERR_FILENO), clock);
  if (!runc_has_no_state(command_line, context.id)) force_delete(command_line.config(), context.id, logger);
  if (auto s = unmount_all(rootfs_path(bundle)); !s.ok()) {
    logger.warn("failed to cleanup rootfs mount", {{"error", s.message()}});
  }
  std::string pid_text;
  std::int64_t pid = -1;
  if (shim::read_file(command_line.init_pid_file(), &pid_text).ok()) {
    pid = std::strtol(pid_text.c_str(), nullptr, 10);
  }
  response->set_pid(static_cast<std::uint32_t>(pid));  // -1 -> 4294967295, as Go's uint32(-1)
  response->set_exit_status(128 + SIGKILL);
  *response->mutable_exited_at() = shim::to_timestamp(std::chrono::system_clock::now());
  return {};
}

std::unique_ptr<shim::TaskService> RuncManager::create_task_service(shim::ServiceContext& context) {
  return std::make_unique<RuncService>(context);
}

}  // namespace runc_shim
