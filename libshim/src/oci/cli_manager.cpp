#include "shim/oci/cli_manager.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

#include "gocompat/go_compat.h"
#include "shim/fs.h"
#include "shim/linux/pod_sandbox.h"
#include "shim/logger.h"
#include "shim/oci/cli_client.h"
#include "shim/oci/cli_info.h"
#include "shim/oci/cli_runtime.h"
#include "shim/oci/runc_options.h"

namespace shim::oci {

namespace {

// runc keeps a container's state in <root>/<namespace>/<id>. Without that dir,
// `runc delete --force` only reports success (runc 1.1: "does not exist" with --force is
// not an error), and after a normal Delete it is gone: skipping runc then saves a
// fork/exec of ~5 ms on `ctr run --rm`'s critical path. Other runtimes (crun, runsc...)
// may keep their state elsewhere: they are always called, as is runc if lstat fails for
// any other reason.
bool runc_has_no_state(const CliCommandLine& command_line, const std::string& id) {
  std::string binary = command_line.binary();
  if (binary != "runc" && !binary.ends_with("/runc")) return false;
  if (id.empty() || id == "." || id == ".." || id.find('/') != std::string::npos) return false;
  struct stat st;
  std::string dir = shim::go_join_path(command_line.state_root(), id);
  return ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT;
}

// Bounds `delete --force` where the action sets no deadline (the `delete` action's,
// 3 s in, comes first: shim/action_context.h); containerd gives the action 5 s.
constexpr std::chrono::milliseconds kForceDeleteTimeout{3000};

// `runc delete --force ID`, best effort: containerd logs our stderr as "cleanup warnings".
// A runtime that hangs is killed at the deadline and the clean-up goes on.
void force_delete(const shim::ActionContext& context, const CliConfig& config) {
  CliClient runc(context.reaper, context.spawner, config,
                 CliClientOptions{.timeout = kForceDeleteTimeout});
  if (auto s = runc.remove(context.identity.id, true); !s.ok()) {
    context.logger.warn("failed to remove runc container", {{"error", s.message()}});
  }
}

}  // namespace

shim::DaemonOptions CliManager::daemon_options(const shim::StartContext& context) const {
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
// and root come from the files Create left there, if it left them (no `runtime` file
// means the default binary, as Go's os.IsNotExist check: a bundle whose task was never
// created, such as a shim-mode sandbox's); runc delete --force (skipped when runc has no
// state for the container) is best effort; libshim then unmounts the rootfs and answers
// that the init was killed (137) now.
shim::Status CliManager::cleanup(const shim::ActionContext& context, std::int64_t* init_pid) {
  const std::string& bundle = context.identity.bundle;
  std::string binary;
  if (auto s = read_runtime(bundle, &binary); !s.ok() && s.code() != shim::Code::kNotFound) {
    return s;
  }
  RuncOptions options;
  bool present = false;
  if (auto s = read_options(bundle, &options, &present); !s.ok()) return s;

  if (binary.empty()) binary = default_binary_;
  CliCommandLine command_line(
      CliConfig{binary, runc_root(options), context.identity.ns, bundle, false});
  if (!runc_has_no_state(command_line, context.identity.id))
    force_delete(context, command_line.config());
  std::string pid_text;
  *init_pid = -1;
  if (shim::read_file(command_line.init_pid_file(), &pid_text).ok()) {
    *init_pid = std::strtol(pid_text.c_str(), nullptr, 10);
  }
  return {};
}

shim::Status CliManager::info(const shim::ActionContext& context,
                              const std::optional<shim::pb::Any>& options,
                              containerd::types::RuntimeInfo* info) const {
  if (shim::Status s = shim::RuntimeManager::info(context, std::nullopt, info); !s.ok()) return s;
  return cli_runtime_info(context, options, info, default_binary_);
}

std::unique_ptr<shim::Runtime> CliManager::create_runtime(shim::ServiceContext& context) {
  return std::make_unique<CliRuntime>(context, default_binary_);
}

std::unique_ptr<shim::SandboxRuntime> CliManager::create_sandbox_runtime(
    shim::ServiceContext& context) {
  return std::make_unique<shim::linux_pod::PodSandboxRuntime>(context);
}

}  // namespace shim::oci
