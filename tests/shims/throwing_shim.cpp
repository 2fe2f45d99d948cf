// containerd-shim-throwing-v1: the shim over runc (shim/oci/cli_manager.h) whose plug-in
// code throws where a container asks it to, for the end-to-end test of a vendor bug
// (tests/integration/plugin_exception_e2e_test.cpp). The container's environment names
// the methods: LIBSHIM_TEST_THROW=open,pause makes Runtime::open and Instance::pause
// throw std::runtime_error("boom in <method>").
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "shim/oci/cli_manager.h"
#include "shim/oci/cli_runtime.h"

namespace {

constexpr std::string_view kThrowVariable = "LIBSHIM_TEST_THROW=";

std::set<std::string> methods_to_throw(const shim::ContainerConfig& config) {
  std::set<std::string> methods;
  const auto* process = config.spec.if_contains("process");
  const auto* env = process != nullptr && process->is_object()
                        ? process->as_object().if_contains("env")
                        : nullptr;
  if (env == nullptr || !env->is_array()) return methods;
  for (const auto& entry : env->as_array()) {
    if (!entry.is_string() || !entry.as_string().starts_with(kThrowVariable)) continue;
    std::istringstream list(std::string(entry.as_string().subview(kThrowVariable.size())));
    for (std::string method; std::getline(list, method, ',');) methods.insert(method);
  }
  return methods;
}

class ThrowingInstance final : public shim::Instance {
 public:
  ThrowingInstance(std::unique_ptr<shim::Instance> inner, std::set<std::string> throws)
      : inner_(std::move(inner)), throws_(std::move(throws)) {}

  shim::StdioOwner stdio_owner() const override {
    maybe("stdio_owner");
    return inner_->stdio_owner();
  }
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override {
    maybe("create");
    return inner_->create(stdio, pid);
  }
  shim::Status start(std::uint32_t* pid) override {
    maybe("start");
    return inner_->start(pid);
  }
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override {
    maybe("exec");
    return inner_->exec(exec, pid);
  }
  shim::Status delete_exec(const std::string& exec_id) override {
    maybe("delete_exec");
    return inner_->delete_exec(exec_id);
  }
  shim::Status kill(int signal, bool all) override {
    maybe("kill");
    return inner_->kill(signal, all);
  }
  shim::Status remove() override {
    maybe("remove");
    return inner_->remove();
  }
  shim::Status pause() override {
    maybe("pause");
    return inner_->pause();
  }
  shim::Status resume() override {
    maybe("resume");
    return inner_->resume();
  }
  shim::Status update(std::string_view resources) override {
    maybe("update");
    return inner_->update(resources);
  }
  shim::Status checkpoint(const shim::CheckpointConfig& config) override {
    maybe("checkpoint");
    return inner_->checkpoint(config);
  }
  shim::Status stats(shim::pb::Any* metrics) override {
    maybe("stats");
    return inner_->stats(metrics);
  }
  shim::Status pids(std::vector<std::uint32_t>* pids) override {
    maybe("pids");
    return inner_->pids(pids);
  }

 private:
  void maybe(const std::string& method) const {
    if (throws_.contains(method)) throw std::runtime_error("boom in " + method);
  }

  std::unique_ptr<shim::Instance> inner_;
  std::set<std::string> throws_;
};

class ThrowingRuntime final : public shim::Runtime {
 public:
  explicit ThrowingRuntime(shim::ServiceContext& context) : inner_(context, "runc") {}

  shim::Status open(const shim::ContainerConfig& config,
                    std::unique_ptr<shim::Instance>* instance) override {
    std::set<std::string> throws = methods_to_throw(config);
    if (throws.contains("open")) throw std::runtime_error("boom in open");
    std::unique_ptr<shim::Instance> opened;
    if (shim::Status s = inner_.open(config, &opened); !s.ok()) return s;
    *instance = std::make_unique<ThrowingInstance>(std::move(opened), std::move(throws));
    return {};
  }

 private:
  shim::oci::CliRuntime inner_;
};

class ThrowingManager final : public shim::oci::CliManager {
 public:
  ThrowingManager() : CliManager("io.containerd.throwing.v1", "runc") {}
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override {
    return std::make_unique<ThrowingRuntime>(context);
  }
};

}  // namespace

int main(int argc, char** argv) {
  ThrowingManager manager;
  return shim::run(argc, argv, manager);
}
