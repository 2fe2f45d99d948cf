// One container of the Wasm runtime class (wasm_runtime.h): decides at Create whether its
// init is a module, checks the module, rewrites the bundle's config.json for the engine,
// and hands every call to the runc instance underneath. An exec of a module is rewritten
// the same way; a native exec runs as it is.
//
// Threading: as shim::Instance (create and start never at once).
#pragma once

#include <memory>
#include <string>

#include "engine.h"
#include "shim/runtime.h"

namespace shim_wasm {

class WasmInstance final : public shim::Instance {
 public:
  // `config` outlives the instance; `runc` is the container's CliInstance.
  WasmInstance(const shim::ContainerConfig& config, std::unique_ptr<shim::Instance> runc,
               const Engine& engine, const shim::Status& engine_status);

  shim::StdioOwner stdio_owner() const override { return runc_->stdio_owner(); }
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override;
  shim::Status start(std::uint32_t* pid) override { return runc_->start(pid); }
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override;
  shim::Status delete_exec(const std::string& exec_id) override {
    return runc_->delete_exec(exec_id);
  }
  shim::Status kill(int signal, bool all) override { return runc_->kill(signal, all); }
  shim::Status remove() override { return runc_->remove(); }
  shim::Status pause() override { return runc_->pause(); }
  shim::Status resume() override { return runc_->resume(); }
  shim::Status update(std::string_view resources_json) override {
    return runc_->update(resources_json);
  }
  // A module's state lives in the engine: CRIU has nothing it could restore it into.
  shim::Status checkpoint(const shim::CheckpointConfig& config) override;
  shim::Status stats(shim::pb::Any* metrics) override { return runc_->stats(metrics); }
  shim::Status pids(std::vector<std::uint32_t>* pids) override { return runc_->pids(pids); }

 private:
  // The container's rootfs on the host: the mounted <bundle>/rootfs, or the spec's root.
  std::string rootfs() const;
  // The engine's verdict, then the module's check.
  shim::Status check_wasm_entry(const std::string& rootfs, const std::string& path) const;

  const shim::ContainerConfig& config_;
  std::unique_ptr<shim::Instance> runc_;
  const Engine& engine_;
  const shim::Status& engine_status_;
  bool wasm_ = false;  // the init is a module (set by create())
};

}  // namespace shim_wasm
