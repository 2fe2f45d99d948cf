#include "wasm_instance.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "fork_plan.h"
#include "shim/fs.h"
#include "wasm_module.h"
#include "wasm_spec.h"

namespace shim_wasm {
namespace {

namespace json = boost::json;

shim::Status with_prefix(const shim::Status& s) {
  return shim::Status(s.code(), fmt::format("wasm: {}", s.message()));
}

}  // namespace

WasmInstance::WasmInstance(shim::ServiceContext& context, const shim::ContainerConfig& config,
                           std::unique_ptr<shim::Instance> runc, const Engine& engine,
                           const shim::Status& engine_status, WasmZygote& zygote)
    : context_(context),
      config_(config),
      runc_(std::move(runc)),
      engine_(engine),
      engine_status_(engine_status),
      zygote_(zygote) {}

std::string WasmInstance::rootfs() const {
  if (!config_.rootfs.empty()) return config_.rootfs;
  std::string path;
  if (const json::value* root = config_.spec.if_contains("root"); root && root->is_object()) {
    if (const json::value* p = root->get_object().if_contains("path"); p && p->is_string()) {
      path = std::string(p->get_string());
    }
  }
  if (path.empty()) path = "rootfs";
  return path.front() == '/' ? path : config_.bundle + "/" + path;
}

shim::Status WasmInstance::check_wasm_entry(const std::string& rootfs,
                                            const std::string& path) const {
  if (!engine_status_.ok()) return with_prefix(engine_status_);
  return with_prefix(check_module_in_rootfs(rootfs, path));
}

shim::Status WasmInstance::create(const shim::ProcessStdio& stdio, std::uint32_t* pid) {
  const json::value* process = config_.spec.if_contains("process");
  if (process == nullptr || !process->is_object() || !config_.checkpoint.empty()) {
    return runc_->create(stdio, pid);  // runc reports a bad spec in its own words
  }
  std::string root = rootfs();
  Entrypoint entry;
  if (!classify(process->get_object(), root, &entry).ok() || !entry.wasm) {
    return runc_->create(stdio, pid);
  }
  if (shim::Status s = check_wasm_entry(root, entry.path); !s.ok()) return s;
  if (shim::Status s = create_forked(root, entry, stdio, pid);
      s.code() != shim::Code::kUnimplemented)
    return s;
  std::string wasm_root = config_.bundle + "/wasm-root";
  if (shim::Status s = prepare_wasm_root(wasm_root, root); !s.ok()) return with_prefix(s);
  json::object spec = wasm_spec(config_.spec, root, wasm_root, engine_, entry);
  // runc reads the bundle's config.json; containerd keeps its own copy of the spec.
  if (shim::Status s =
          shim::write_file_atomic(config_.bundle + "/config.json", json::serialize(spec), 0644);
      !s.ok()) {
    return with_prefix(s);
  }
  wasm_ = true;
  return runc_->create(stdio, pid);
}

shim::Status WasmInstance::create_forked(const std::string& rootfs, const Entrypoint& entry,
                                         const shim::ProcessStdio& stdio, std::uint32_t* pid) {
  shim::Status status(shim::Code::kUnimplemented, zygote_.unavailable());
  if (zygote_.unavailable().empty()) {
    ForkPlan plan;
    status = plan_init(config_.spec, rootfs, entry, stdio, &plan);
    if (status.ok()) {
      auto forked = std::make_unique<ForkedContainer>(context_, zygote_, rootfs);
      status = forked->launch(std::move(plan), pid);
      if (status.ok()) {
        forked_ = std::move(forked);
        wasm_ = true;
        return {};
      }
    }
  }
  if (status.code() == shim::Code::kUnimplemented) {
    context_.logger.info("wasm: through runc and the engine's CLI",
                         {{"id", config_.id}, {"reason", status.message()}});
  }
  return status;
}

shim::Status WasmInstance::exec(const shim::ExecConfig& exec, std::uint32_t* pid) {
  if (forked_) return forked_->exec(exec, pid);
  json::error_code ec;
  json::value process = json::parse(exec.spec, ec);
  if (ec || !process.is_object()) return runc_->exec(exec, pid);
  std::string root = rootfs();
  Entrypoint entry;
  if (!classify(process.get_object(), root, &entry).ok() || !entry.wasm) {
    return runc_->exec(exec, pid);
  }
  if (shim::Status s = check_wasm_entry(root, entry.path); !s.ok()) return s;
  if (!wasm_) {
    return shim::Status(shim::Code::kFailedPrecondition,
                        fmt::format("wasm: cannot exec the module {} in a container whose init is "
                                    "not a module (the engine is not mounted in it)",
                                    entry.path));
  }
  shim::ExecConfig rewritten = exec;
  rewritten.spec = json::serialize(wasm_process(process.get_object(), engine_, entry));
  return runc_->exec(rewritten, pid);
}

shim::Status WasmInstance::checkpoint(const shim::CheckpointConfig& config) {
  if (forked_) return forked_->checkpoint(config);
  if (wasm_) {
    return shim::Status(shim::Code::kUnimplemented,
                        "wasm: checkpoint of a WebAssembly container is not supported");
  }
  return runc_->checkpoint(config);
}

}  // namespace shim_wasm
