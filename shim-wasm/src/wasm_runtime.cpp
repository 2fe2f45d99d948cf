#include "wasm_runtime.h"

#include "wasm_instance.h"

namespace shim_wasm {

WasmRuntime::WasmRuntime(shim::ServiceContext& context, Engine engine, shim::Status engine_status)
    : context_(context),
      runc_(context, "runc"),
      engine_(std::move(engine)),
      engine_status_(std::move(engine_status)),
      zygote_(context, engine_, engine_status_.ok()) {}

shim::Status WasmRuntime::open(const shim::ContainerConfig& config,
                               std::unique_ptr<shim::Instance>* instance) {
  std::unique_ptr<shim::Instance> runc;
  if (shim::Status s = runc_.open(config, &runc); !s.ok()) return s;
  *instance = std::make_unique<WasmInstance>(context_, config, std::move(runc), engine_,
                                             engine_status_, zygote_);
  return {};
}

}  // namespace shim_wasm
