#include "shim/oci/cli_runtime.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim::oci {
namespace {

// go-runc: a terminal process gets no IO (runc's output is captured for the error
// text; the process gets the pty), any other the pipes (-1: /dev/null).
std::optional<Stdio> runc_stdio(const shim::ProcessStdio& stdio) {
  if (stdio.terminal()) return std::nullopt;
  return Stdio{stdio.stdin, stdio.stdout, stdio.stderr};
}

}  // namespace

CliInstance::CliInstance(const shim::ContainerConfig& config, RuncOptions options, CliClient runc)
    : config_(config), options_(std::move(options)), runc_(std::move(runc)) {}

shim::StdioOwner CliInstance::stdio_owner() const {
  return {static_cast<int>(options_.io_uid()), static_cast<int>(options_.io_gid())};
}

shim::Status CliInstance::create(const shim::ProcessStdio& stdio, std::uint32_t* pid) {
  if (!config_.checkpoint.empty()) {
    // Go's "created checkpoint" state: runc restore runs at Start with these pipes.
    restore_ =
        restore_args(config_.bundle, options_, config_.checkpoint, config_.parent_checkpoint);
    restore_stdio_ = stdio;
    return {};
  }
  // runc moves its init into the container's cgroup through cgroup.procs.
  if (config_.warm_cgroup_migration) config_.warm_cgroup_migration();
  CreateArgs args{.console_socket = stdio.console_socket,
                  .no_pivot = options_.no_pivot_root(),
                  .no_new_keyring = options_.no_new_keyring()};
  if (shim::Status s = runc_.create(config_.id, args, runc_stdio(stdio)); !s.ok()) return s;
  return runc_.init_pid(pid);
}

shim::Status CliInstance::start(std::uint32_t* pid) {
  if (restore_) return restore(pid);
  return runc_.start(config_.id);
}

// Go hands `runc restore` the create-time pipes (null IO: /dev/null; a terminal: none,
// the pty comes through --console-socket) and never captures its output.
shim::Status CliInstance::restore(std::uint32_t* pid) {
  if (config_.warm_cgroup_migration) config_.warm_cgroup_migration();  // as create()
  RestoreArgs args = *restore_;
  args.console_socket = restore_stdio_.console_socket;
  if (shim::Status s = runc_.restore(config_.id, args, runc_stdio(restore_stdio_)); !s.ok())
    return s;
  if (shim::Status s = runc_.init_pid(pid); !s.ok()) {
    return shim::unknown(
        fmt::format("failed to retrieve OCI runtime container pid: {}", s.message()));
  }
  restore_.reset();
  return {};
}

shim::Status CliInstance::exec(const shim::ExecConfig& exec, std::uint32_t* pid) {
  // runc moves the exec's process into the container's cgroup as it moves the init.
  if (config_.warm_cgroup_migration) config_.warm_cgroup_migration();
  shim::Status status = runc_.exec(config_.id, exec.exec_id, exec.spec, exec.stdio.console_socket,
                                   runc_stdio(exec.stdio));
  if (!status.ok()) return status;
  return runc_.exec_pid(exec.exec_id, pid);
}

shim::Status CliInstance::delete_exec(const std::string& exec_id) {
  ::unlink(runc_.command_line().exec_pid_file(exec_id).c_str());
  return {};
}

shim::Status CliInstance::kill(int signal, bool all) { return runc_.kill(config_.id, signal, all); }

shim::Status CliInstance::remove() { return runc_.remove(config_.id, false); }

shim::Status CliInstance::pause() { return runc_.pause(config_.id); }

shim::Status CliInstance::resume() { return runc_.resume(config_.id); }

shim::Status CliInstance::update(std::string_view resources_json) {
  shim::Status status = runc_.update(config_.id, resources_json);
  return status.ok() ? status : shim::unknown(status.message());
}

shim::Status CliInstance::checkpoint(const shim::CheckpointConfig& config) {
  CheckpointOptions options;
  if (config.options) {
    if (shim::Status s = decode_checkpoint_options(*config.options, &options); !s.ok()) return s;
  }
  return runc_.checkpoint(config_.id, checkpoint_args(config.path, options));
}

// runc's `ps --format json` is its container's cgroup walked (libcontainer Processes(),
// cgroups GetAllPids): libshim reads that cgroup itself (Unimplemented sends Pids to the
// task service's default, shim/linux/cgroup.h read_cgroup_pids) and spares a fork/exec
// of runc per call. containerd sends Pids for every task when it loads its shims after
// a restart, within 5 s per shim (core/runtime/v2/shim_load.go, #13954): 100 containers
// of one pod are 100 calls. Other CLIs (crun, runsc, whose ps lists a sandbox's
// processes) are asked.
shim::Status CliInstance::pids(std::vector<std::uint32_t>* pids) {
  const std::string& binary = runc_.command_line().binary();
  if (binary == "runc" || binary.ends_with("/runc")) {
    return shim::Status(shim::Code::kUnimplemented, "runc ps reads the cgroup");
  }
  std::vector<int> listed;
  if (shim::Status s = runc_.ps(config_.id, &listed); !s.ok()) return shim::unknown(s.message());
  for (int pid : listed) pids->push_back(static_cast<std::uint32_t>(pid));
  return {};
}

shim::Status CliRuntime::open(const shim::ContainerConfig& config,
                              std::unique_ptr<shim::Instance>* instance) {
  return make_instance(config, /*write_bundle_files=*/true, instance);
}

// The CLI keeps the container's state itself (its --root): the next program needs only
// the config, whose runtime options name the binary, root and cgroup driver again.
shim::Status CliInstance::save_for_upgrade(boost::json::object* state) {
  if (restore_) {
    return shim::Status(
        shim::Code::kFailedPrecondition,
        fmt::format("container {} waits for its restore from {}", config_.id, config_.checkpoint));
  }
  state->clear();
  return {};
}

shim::Status CliRuntime::reopen(const shim::ContainerConfig& config, const boost::json::object&,
                                std::unique_ptr<shim::Instance>* instance) {
  return make_instance(config, /*write_bundle_files=*/false, instance);
}

shim::Status CliRuntime::make_instance(const shim::ContainerConfig& config, bool write_bundle_files,
                                       std::unique_ptr<shim::Instance>* instance) {
  DecodedOptions decoded;
  if (config.options && !config.options->type_url().empty()) {
    if (shim::Status s = decode_runc_options(*config.options, &decoded); !s.ok()) return s;
    if (!decoded.note.empty() && write_bundle_files)
      context_.logger.warn("runtime options", {{"note", decoded.note}});
  }
  const RuncOptions& options = decoded.options;
  if (write_bundle_files) {
    if (shim::Status s = write_options(config.bundle, options); !s.ok()) return s;
    if (shim::Status s = write_runtime(config.bundle, options.binary_name()); !s.ok()) return s;
  }
  std::string binary = options.binary_name().empty() ? default_binary_ : options.binary_name();
  CliConfig runc{binary, runc_root(options), context_.identity.ns, config.bundle,
                 options.systemd_cgroup()};
  runc.criu = options.criu_path();
  *instance = std::make_unique<CliInstance>(
      config, options, CliClient(context_.reaper, context_.spawner, std::move(runc)));
  return {};
}

}  // namespace shim::oci
