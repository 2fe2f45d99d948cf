// One container of the Wasm runtime class (wasm_runtime.h): decides at Create whether its
// init is a module and checks the module. A module goes to the zygote when it applies
// the spec (a ForkedContainer then takes every call); otherwise the bundle's config.json
// is rewritten for the engine's CLI and every call goes to the runc instance underneath
// (an exec of a module is rewritten the same way; a native exec runs as it is).
//
// Threading: as shim::Instance (create and start never at once).
#pragma once

#include <memory>
#include <string>

#include "engine.h"
#include "forked_container.h"
#include "shim/runtime.h"
#include "shim/service_context.h"
#include "wasm_zygote.h"

namespace shim_wasm {

class WasmInstance final : public shim::Instance {
 public:
  // `config` outlives the instance; `runc` is the container's CliInstance.
  WasmInstance(shim::ServiceContext& context, const shim::ContainerConfig& config,
               std::unique_ptr<shim::Instance> runc, const Engine& engine,
               const shim::Status& engine_status, WasmZygote& zygote);

  shim::StdioOwner stdio_owner() const override { return runc_->stdio_owner(); }
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override;
  shim::Status start(std::uint32_t* pid) override { return active().start(pid); }
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override;
  shim::Status delete_exec(const std::string& exec_id) override {
    return active().delete_exec(exec_id);
  }
  shim::Status kill(int signal, bool all) override { return active().kill(signal, all); }
  shim::Status remove() override { return active().remove(); }
  shim::Status pause() override { return active().pause(); }
  shim::Status resume() override { return active().resume(); }
  shim::Status update(std::string_view resources_json) override {
    return active().update(resources_json);
  }
  // A module's state lives in the engine: CRIU has nothing it could restore it into.
  shim::Status checkpoint(const shim::CheckpointConfig& config) override;
  shim::Status stats(shim::pb::Any* metrics) override { return active().stats(metrics); }
  shim::Status pids(std::vector<std::uint32_t>* pids) override { return active().pids(pids); }

 private:
  // The container's rootfs on the host: the mounted <bundle>/rootfs, or the spec's root.
  std::string rootfs() const;
  // Where every call goes once Create chose.
  shim::Instance& active() { return forked_ ? *forked_ : *runc_; }
  // Create through the zygote; Unimplemented (nothing made) when it does not apply
  // this spec.
  shim::Status create_forked(const std::string& rootfs, const Entrypoint& entry,
                             const shim::ProcessStdio& stdio, std::uint32_t* pid);
  // The engine's verdict, then the module's check.
  shim::Status check_wasm_entry(const std::string& rootfs, const std::string& path) const;

  shim::ServiceContext& context_;
  const shim::ContainerConfig& config_;
  std::unique_ptr<shim::Instance> runc_;
  std::unique_ptr<ForkedContainer> forked_;  // set by a Create through the zygote
  const Engine& engine_;
  const shim::Status& engine_status_;
  WasmZygote& zygote_;
  bool wasm_ = false;  // the init is a module (set by create())
};

}  // namespace shim_wasm
