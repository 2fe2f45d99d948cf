// containerd-shim-crun-v1: a crun vendor's shim on the installed libshim, written against
// its OCI-runtime CLI client (shim/oci/cli_client.h): each Instance method is one crun
// command, with the command lines and error texts of containerd's runc shim. (The whole
// runc-shim behaviour, options and checkpoints included, is shim::oci::CliManager in one
// line; this file shows the client a vendor builds its own behaviour on.)
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shim/oci/cli_client.h"
#include "shim/runtime_manager.h"
#include "shim/service_context.h"

namespace {

constexpr const char* kCrunRoot = "/run/containerd/crun";

shim::oci::CliConfig crun_config(const std::string& ns, const std::string& bundle) {
  return {.binary = "crun", .root = kCrunRoot, .ns = ns, .bundle = bundle};
}

// A terminal process gets no pipes (crun sends its pty to the console socket).
std::optional<shim::oci::Stdio> crun_stdio(const shim::ProcessStdio& stdio) {
  if (stdio.terminal()) return std::nullopt;
  return shim::oci::Stdio{stdio.stdin, stdio.stdout, stdio.stderr};
}

class CrunInstance final : public shim::Instance {
 public:
  CrunInstance(std::string id, shim::oci::CliClient crun)
      : id_(std::move(id)), crun_(std::move(crun)) {}

  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override {
    shim::oci::CreateArgs args{.console_socket = stdio.console_socket};
    if (auto s = crun_.create(id_, args, crun_stdio(stdio)); !s.ok()) return s;
    return crun_.init_pid(pid);
  }
  shim::Status start(std::uint32_t*) override { return crun_.start(id_); }
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override {
    auto s =
        crun_.exec(id_, exec.exec_id, exec.spec, exec.stdio.console_socket, crun_stdio(exec.stdio));
    return s.ok() ? crun_.exec_pid(exec.exec_id, pid) : s;
  }
  shim::Status kill(int signal, bool all) override { return crun_.kill(id_, signal, all); }
  shim::Status remove() override { return crun_.remove(id_, /*force=*/false); }
  shim::Status pause() override { return crun_.pause(id_); }
  shim::Status resume() override { return crun_.resume(id_); }
  shim::Status pids(std::vector<std::uint32_t>* pids) override {
    std::vector<int> listed;
    if (auto s = crun_.ps(id_, &listed); !s.ok()) return s;
    pids->assign(listed.begin(), listed.end());
    return {};
  }

 private:
  std::string id_;
  shim::oci::CliClient crun_;
};

class CrunRuntime final : public shim::Runtime {
 public:
  explicit CrunRuntime(shim::ServiceContext& context) : context_(context) {}
  shim::Status open(const shim::ContainerConfig& config,
                    std::unique_ptr<shim::Instance>* instance) override {
    shim::oci::CliClient crun(context_.reaper, context_.spawner,
                              crun_config(context_.identity.ns, config.bundle));
    *instance = std::make_unique<CrunInstance>(config.id, std::move(crun));
    return {};
  }

 private:
  shim::ServiceContext& context_;
};

class CrunManager final : public shim::RuntimeManager {
 public:
  std::string name() const override { return "io.containerd.crun.v1"; }
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override {
    return std::make_unique<CrunRuntime>(context);
  }
  // The shim died: `crun delete --force`, and the init's pid from its pid file.
  shim::Status cleanup(const shim::ActionContext& context, std::int64_t* init_pid) override {
    const auto& id = context.identity;
    shim::oci::CliClient crun(context.reaper, context.spawner, crun_config(id.ns, id.bundle));
    if (auto s = crun.remove(id.id, /*force=*/true); !s.ok()) {
      context.logger.warn("crun delete --force", {{"error", s.message()}});
    }
    std::uint32_t pid = 0;
    *init_pid = crun.init_pid(&pid).ok() ? pid : -1;
    return {};
  }
};

}  // namespace

int main(int argc, char** argv) {
  CrunManager manager;
  return shim::run(argc, argv, manager);
}
