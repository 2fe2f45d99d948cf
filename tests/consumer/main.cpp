// containerd-shim-consumer-v1: a minimal vendor shim on the installed libshim's process
// tier. Each container is its OCI process, chrooted into the rootfs and held from Create
// until Start; an exec runs chrooted there too. libshim serves the rest of the task API.
#include <boost/json.hpp>

#include "agent.h"
#include "shim/process/spawner.h"
#include "shim/runtime_manager.h"
#include "shim/service_context.h"

namespace {

shim::Status spawn(shim::ServiceContext& context, const boost::json::value& process,
                   const std::string& root, const shim::ProcessStdio& stdio,
                   std::vector<std::string> extra_env, shim::SpawnedProcess* child, bool hold) {
  if (stdio.terminal()) return shim::invalid_argument("the consumer shim has no terminals");
  const auto* args = process.is_object() ? process.as_object().if_contains("args") : nullptr;
  if (args == nullptr || !args->is_array() || args->as_array().empty()) {
    return shim::invalid_argument("the OCI process has no args");
  }
  shim::SpawnRequest request;
  request.argv = boost::json::value_to<std::vector<std::string>>(*args);
  request.path = request.argv[0];
  std::vector<std::string> env;
  if (const auto* e = process.as_object().if_contains("env"); e != nullptr && e->is_array()) {
    env = boost::json::value_to<std::vector<std::string>>(*e);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  request.env = env;
  request.root = root;
  request.hold = hold;
  for (auto [child_fd, fd] : {std::pair{0, stdio.stdin}, {1, stdio.stdout}, {2, stdio.stderr}}) {
    if (fd >= 0) request.fds.emplace_back(child_fd, fd);
  }
  return context.spawner.spawn(request, child);
}

// The rootfs containerd mounted, else the spec's root.path (`ctr run --rootfs`).
std::string root_of(const shim::ContainerConfig& config) {
  if (!config.rootfs.empty()) return config.rootfs;
  const auto* root = config.spec.if_contains("root");
  const auto* path = root != nullptr && root->is_object() ? root->as_object().if_contains("path") : nullptr;
  std::string dir = path != nullptr && path->is_string() ? std::string(path->as_string()) : "rootfs";
  return dir.starts_with('/') ? dir : config.bundle + "/" + dir;
}

class ConsumerInstance final : public shim::Instance {
 public:
  ConsumerInstance(shim::ServiceContext& context, const shim::ContainerConfig& config)
      : context_(context), config_(config), root_(root_of(config)) {}

  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override {
    auto s = spawn(context_, config_.spec.at("process"), root_, stdio, consumer::agent_env(config_.id),
                   &init_, /*hold=*/true);
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
  shim::Status open(const shim::ContainerConfig& config, std::unique_ptr<shim::Instance>* instance) override {
    if (!config.spec.contains("process")) return shim::invalid_argument("config.json has no process");
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
