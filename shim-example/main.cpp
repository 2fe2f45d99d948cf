// containerd-shim-example-v1: a complete containerd shim for a tiny runtime of its own,
// written on libshim's process tier. Each container is its OCI process, run by the shim
// itself in new pid and mount namespaces and chrooted into the bundle's rootfs (no
// cgroups, capabilities or seccomp: a tutorial, not a sandbox).
//
// A vendor writes three things: an Instance (one container's processes), a Runtime that
// opens Instances, and a RuntimeManager that names the shim. libshim does the rest: the
// task API, its states and errors, events in containerd's order, stdio, exits, Wait,
// and the start and delete actions. docs/writing-a-shim.md walks through this file.
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "shim/fs.h"
#include "shim/process/spawner.h"
#include "shim/runtime_manager.h"
#include "shim/service_context.h"

namespace {

// The strings of a JSON array. Checked, not value_to(): that throws, and this runs on the
// pool, where an exception would lose the RPC's reply.
shim::Status strings_of(const boost::json::array& array, const char* what, std::vector<std::string>* out) {
  for (const auto& item : array) {
    if (!item.is_string()) return shim::invalid_argument(fmt::format("the OCI process {} must be strings", what));
    out->emplace_back(item.as_string());
  }
  return {};
}

// What this runtime honours of an OCI process: args, env and cwd.
shim::Status process_request(const boost::json::value& process, const std::string& root,
                             shim::SpawnRequest* request) {
  const auto* object = process.if_object();
  const auto* args = object != nullptr ? object->if_contains("args") : nullptr;
  if (args == nullptr || !args->is_array() || args->as_array().empty()) {
    return shim::invalid_argument("the OCI process has no args");
  }
  if (auto s = strings_of(args->as_array(), "args", &request->argv); !s.ok()) return s;
  request->path = request->argv[0];
  request->env = std::vector<std::string>();
  if (const auto* env = object->if_contains("env"); env != nullptr && env->is_array()) {
    if (auto s = strings_of(env->as_array(), "env", &*request->env); !s.ok()) return s;
  }
  if (const auto* cwd = object->if_contains("cwd"); cwd != nullptr && cwd->is_string()) {
    request->cwd = std::string(cwd->as_string());
  }
  request->root = root;
  return {};
}

void use_stdio(const shim::ProcessStdio& stdio, shim::SpawnRequest* request) {
  for (auto [child_fd, fd] : {std::pair{0, stdio.stdin}, {1, stdio.stdout}, {2, stdio.stderr}}) {
    if (fd >= 0) request->fds.emplace_back(child_fd, fd);  // unset: /dev/null
  }
}

class ExampleInstance final : public shim::Instance {
 public:
  ExampleInstance(shim::ServiceContext& context, const shim::ContainerConfig& config, std::string root)
      : context_(context), config_(config), root_(std::move(root)) {}

  // The init exists from Create on, held just before exec (as `runc create` leaves it),
  // so containerd learns its pid with /tasks/create.
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override {
    if (stdio.terminal()) return shim::invalid_argument("the example runtime has no terminals");
    shim::SpawnRequest request;
    if (auto s = process_request(config_.spec.at("process"), root_, &request); !s.ok()) return s;
    use_stdio(stdio, &request);
    request.new_namespaces = CLONE_NEWPID | CLONE_NEWNS;  // init is pid 1 of its container
    request.mount_proc = std::filesystem::is_directory(root_ + "/proc");
    request.mount_dev = std::filesystem::is_directory(root_ + "/dev");
    request.hold = true;
    shim::SpawnedProcess init;
    if (auto s = context_.spawner.spawn(request, &init); !s.ok()) return s;
    *pid = static_cast<std::uint32_t>(init.pid);
    init_ = std::move(init);
    // For the `delete` action, which runs if this shim dies (see ExampleManager::cleanup).
    return shim::write_file_atomic(config_.bundle + "/init.pid", std::to_string(*pid));
  }

  shim::Status start(std::uint32_t*) override { return init_.gate.release(); }

  // An exec enters the init's pid and mount namespaces and its root.
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override {
    if (exec.stdio.terminal()) return shim::invalid_argument("the example runtime has no terminals");
    boost::system::error_code ec;
    boost::json::value process = boost::json::parse(exec.spec, ec);
    shim::SpawnRequest request;
    if (ec) return shim::invalid_argument("exec spec is not JSON");
    if (auto s = process_request(process, root_, &request); !s.ok()) return s;
    use_stdio(exec.stdio, &request);
    request.join_pidfd = init_.handle.pidfd();
    request.join_namespaces = CLONE_NEWPID | CLONE_NEWNS;
    shim::SpawnedProcess child;
    if (auto s = context_.spawner.spawn(request, &child); !s.ok()) return s;
    *pid = static_cast<std::uint32_t>(child.pid);
    return {};
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

  shim::Status open(const shim::ContainerConfig& config, std::unique_ptr<shim::Instance>* instance) override {
    if (!config.spec.contains("process")) {
      return shim::invalid_argument(fmt::format("{}/config.json is not an OCI spec", config.bundle));
    }
    *instance = std::make_unique<ExampleInstance>(context_, config, rootfs_of(config));
    return {};
  }

  // The rootfs containerd mounted for us, else the spec's root.path (bundle-relative).
  static std::string rootfs_of(const shim::ContainerConfig& config) {
    if (!config.rootfs.empty()) return config.rootfs;
    const auto* spec_root = config.spec.if_contains("root");
    const auto* path = spec_root != nullptr && spec_root->is_object() ? spec_root->as_object().if_contains("path") : nullptr;
    std::string root = path != nullptr && path->is_string() ? std::string(path->as_string()) : "rootfs";
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
    *init_pid = shim::read_file(context.identity.bundle + "/init.pid", &text).ok() ? std::atoll(text.c_str()) : -1;
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
