// The process tier of the Wasm runtime class: a container whose entrypoint is a
// WebAssembly module runs it in WasmEdge, forked from the shim's zygote into the
// namespaces and cgroup of the container's spec (forked_container.h), or, for a spec the
// zygote does not apply, in the engine's CLI inside the container runc makes from it
// (wasm_spec.h); any other container (a pod's pause container, a shell image) runs as
// runc runs it. Both go through libshim's CliRuntime, so stats,
// OOM events, pids, pause and resume, exec and kill are the runc shim's.
//
// Threading: as shim::Runtime and shim::Instance (every call on a pool thread).
#pragma once

#include <memory>
#include <string>

#include "engine.h"
#include "shim/oci/cli_runtime.h"
#include "shim/runtime.h"
#include "shim/service_context.h"
#include "wasm_zygote.h"

namespace shim_wasm {

// Opens a runc CliInstance per container and wraps it in a WasmInstance.
class WasmRuntime final : public shim::Runtime {
 public:
  // `engine_status` is find_engine()'s verdict: when not OK, only Wasm entrypoints fail
  // (with it), native containers still run.
  WasmRuntime(shim::ServiceContext& context, Engine engine, shim::Status engine_status);

  shim::Status open(const shim::ContainerConfig& config,
                    std::unique_ptr<shim::Instance>* instance) override;

 private:
  shim::ServiceContext& context_;
  shim::oci::CliRuntime runc_;
  Engine engine_;
  shim::Status engine_status_;
  WasmZygote zygote_;  // after engine_, which it uses
};

}  // namespace shim_wasm
