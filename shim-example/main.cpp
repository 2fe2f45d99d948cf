// containerd-shim-example-v1: a complete containerd shim for a tiny runtime of its own,
// written on libshim's process tier. Each container is its OCI process, run by the shim
// itself in new pid and mount namespaces and chrooted into the bundle's rootfs, with the
// process's user, capabilities, rlimits and terminal (no cgroups, seccomp or AppArmor: a
// tutorial, not a sandbox).
//
// A vendor writes three things: an Instance (one container's processes), a Runtime that
// opens Instances, and a RuntimeManager that names the shim. libshim does the rest: the
// task API, its states and errors, events in containerd's order, stdio, exits, Wait,
// OCI process semantics, and the start and delete actions. docs/writing-a-shim.md walks
// through this file.
#include <sched.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "shim/fs.h"
#include "shim/oci/process_spec.h"
#include "shim/process/spawner.h"
#include "shim/runtime_manager.h"
#include "shim/service_context.h"

namespace {

class ExampleInstance final : public shim::Instance {
 public:
  ExampleInstance(shim::ServiceContext& context, const shim::ContainerConfig& config,
                  std::string root)
      : context_(context), config_(config), root_(std::move(root)) {}

  // The init exists from Create on, held just before exec (as `runc create` leaves it),
  // so containerd learns its pid with /tasks/create.
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override {
    shim::oci::ProcessSpawn init;
    auto s =
        shim::oci::spawn_request_from_process(config_.spec.at("process"), {root_, stdio}, &init);
    if (!s.ok()) return s;
    init.request.new_namespaces = CLONE_NEWPID | CLONE_NEWNS;  // init is pid 1 of its container
    init.request.mount_proc = std::filesystem::is_directory(root_ + "/proc");
    init.request.mount_dev = std::filesystem::is_directory(root_ + "/dev");
    init.request.hold = true;
    if (s = context_.spawner.spawn(init.request, &init_); !s.ok()) return s;
    if (s = init.send_console(); !s.ok()) return s;  // a terminal's master, to libshim
    *pid = static_cast<std::uint32_t>(init_.pid);
    // For the `delete` action, which runs if this shim dies (see ExampleManager::cleanup).
    return shim::write_file_atomic(config_.bundle + "/init.pid", std::to_string(*pid));
  }

  shim::Status start(std::uint32_t*) override { return init_.gate.release(); }

  // An exec enters the init's pid and mount namespaces and its root.
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override {
    shim::oci::ProcessSpawn process;
    auto s = shim::oci::spawn_request_from_process(exec.spec, {root_, exec.stdio}, &process);
    if (!s.ok()) return s;
    process.request.join_pidfd = init_.handle.pidfd();
    process.request.join_namespaces = CLONE_NEWPID | CLONE_NEWNS;
    shim::SpawnedProcess child;
    if (s = context_.spawner.spawn(process.request, &child); !s.ok()) return s;
    *pid = static_cast<std::uint32_t>(child.pid);
    return process.send_console();
  }

  // A started init is gone by now; one never started leaves at its dropped gate.
  shim::Status remove() override {
    init_.gate = shim::ProcessGate();
    return {};
  }
  // kill(), stats() and pids(): libshim's defaults (the init's pidfd, its cgroup).

 private:
  shim::ServiceContext& context_;
  const shim::ContainerConfig& config_;
  std::string root_;
  shim::SpawnedProcess init_;
};

class ExampleRuntime final : public shim::Runtime {
 public:
  explicit ExampleRuntime(shim::ServiceContext& context) : context_(context) {}

  shim::Status open(const shim::ContainerConfig& config,
                    std::unique_ptr<shim::Instance>* instance) override {
    if (!config.spec.contains("process")) {
      return shim::invalid_argument(
          fmt::format("{}/config.json is not an OCI spec", config.bundle));
    }
    *instance = std::make_unique<ExampleInstance>(context_, config, rootfs_of(config));
    return {};
  }

  // The rootfs containerd mounted for us, else the spec's root.path (bundle-relative).
  static std::string rootfs_of(const shim::ContainerConfig& config) {
    if (!config.rootfs.empty()) return config.rootfs;
    const auto* spec_root = config.spec.if_contains("root");
    const auto* path = spec_root != nullptr && spec_root->is_object()
                           ? spec_root->as_object().if_contains("path")
                           : nullptr;
    std::string root =
        path != nullptr && path->is_string() ? std::string(path->as_string()) : "rootfs";
    return root.starts_with('/') ? root : config.bundle + "/" + root;
  }

 private:
  shim::ServiceContext& context_;
};

class ExampleManager final : public shim::RuntimeManager {
 public:
  std::string name() const override { return "io.containerd.example.v1"; }

  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override {
    return std::make_unique<ExampleRuntime>(context);
  }

  // The shim died, its containers live on: kill the init if init.pid still names a
  // chrooted process (a reused pid of a host process has the root "/").
  shim::Status cleanup(const shim::ActionContext& context, std::int64_t* init_pid) override {
    std::string text;
    *init_pid = shim::read_file(context.identity.bundle + "/init.pid", &text).ok()
                    ? std::atoll(text.c_str())
                    : -1;
    std::error_code ec;
    auto root = std::filesystem::read_symlink(fmt::format("/proc/{}/root", *init_pid), ec);
    if (*init_pid > 0 && !ec && root != "/") ::kill(static_cast<pid_t>(*init_pid), SIGKILL);
    return {};
  }
};

}  // namespace

int main(int argc, char** argv) {
  ExampleManager manager;
  return shim::run(argc, argv, manager);
}
