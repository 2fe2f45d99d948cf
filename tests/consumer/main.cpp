// containerd-shim-consumer-v1: a minimal vendor shim on the installed libshim's process
// tier. Each container is its OCI process, chrooted into the rootfs and held from Create
// until Start; an exec runs chrooted there too. libshim serves the rest of the task API.
#include <boost/json.hpp>

#include "agent.h"
#include "shim/oci/process_spec.h"
#include "shim/process/spawner.h"
#include "shim/runtime_manager.h"
#include "shim/service_context.h"

namespace {

// The OCI process as runc runs it (shim/oci/process_spec.h), with the agent's
// environment added; a terminal gets a pty whose master goes to libshim.
shim::Status spawn(shim::ServiceContext& context, const boost::json::value& process,
                   const std::string& root, const shim::ProcessStdio& stdio,
                   const std::vector<std::string>& extra_env, shim::SpawnedProcess* child,
                   bool hold) {
  shim::oci::ProcessSpawn spawn;
  if (auto s = shim::oci::spawn_request_from_process(process, {root, stdio}, &spawn); !s.ok()) {
    return s;
  }
  if (!spawn.request.env) spawn.request.env.emplace();
  spawn.request.env->insert(spawn.request.env->end(), extra_env.begin(), extra_env.end());
  spawn.request.hold = hold;
  if (auto s = context.spawner.spawn(spawn.request, child); !s.ok()) return s;
  return spawn.send_console();
}

// The rootfs containerd mounted, else the spec's root.path (`ctr run --rootfs`).
std::string root_of(const shim::ContainerConfig& config) {
  if (!config.rootfs.empty()) return config.rootfs;
  const auto* root = config.spec.if_contains("root");
  const auto* path =
      root != nullptr && root->is_object() ? root->as_object().if_contains("path") : nullptr;
  std::string dir =
      path != nullptr && path->is_string() ? std::string(path->as_string()) : "rootfs";
  return dir.starts_with('/') ? dir : config.bundle + "/" + dir;
}

class ConsumerInstance final : public shim::Instance {
 public:
  ConsumerInstance(shim::ServiceContext& context, const shim::ContainerConfig& config)
      : context_(context), config_(config), root_(root_of(config)) {}

  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override {
    auto s = spawn(context_, config_.spec.at("process"), root_, stdio,
                   consumer::agent_env(config_.id), &init_, /*hold=*/true);
    if (s.ok()) *pid = static_cast<std::uint32_t>(init_.pid);
    return s;
  }
  shim::Status start(std::uint32_t*) override { return init_.gate.release(); }
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override {
    boost::system::error_code ec;
    auto process = boost::json::parse(exec.spec, ec);
    if (ec) return shim::invalid_argument("exec spec is not JSON");
    shim::SpawnedProcess child;
    auto s = spawn(context_, process, root_, exec.stdio, {}, &child, /*hold=*/false);
    if (s.ok()) *pid = static_cast<std::uint32_t>(child.pid);
    return s;
  }
  shim::Status remove() override {
    init_.gate = shim::ProcessGate();  // a never-started init exits here
    return {};
  }

 private:
  shim::ServiceContext& context_;
  const shim::ContainerConfig& config_;
  std::string root_;
  shim::SpawnedProcess init_;
};

class ConsumerRuntime final : public shim::Runtime {
 public:
  explicit ConsumerRuntime(shim::ServiceContext& context) : context_(context) {}
  shim::Status open(const shim::ContainerConfig& config,
                    std::unique_ptr<shim::Instance>* instance) override {
    if (!config.spec.contains("process"))
      return shim::invalid_argument("config.json has no process");
    *instance = std::make_unique<ConsumerInstance>(context_, config);
    return {};
  }

 private:
  shim::ServiceContext& context_;
};

class ConsumerManager final : public shim::RuntimeManager {
 public:
  std::string name() const override { return "io.containerd.consumer.v1"; }
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override {
    return std::make_unique<ConsumerRuntime>(context);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ConsumerManager manager;
  return shim::run(argc, argv, manager);
}
