// containerd-shim-wasm-v1's whole shim: libshim's runc shim (shim/oci/cli_manager.h:
// the shim cgroup, the `delete` action, pods without a pause container) whose containers
// are WasmInstances, and an -info that names the engine.
//
// Threading: as shim::RuntimeManager (each method on the main thread of its action).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "shim/oci/cli_manager.h"

namespace shim_wasm {

// The runtime name containerd knows the shim by (binary containerd-shim-wasm-v1).
inline constexpr const char* kRuntimeName = "io.containerd.wasm.v1";
// -info's annotations: the engine ("wasmedge 0.17.1") and the root it runs from.
inline constexpr const char* kEngineAnnotation = "io.libshim.wasm.engine";
inline constexpr const char* kEngineRootAnnotation = "io.libshim.wasm.engine-root";
// Whether the ungrouped containers of a namespace share one shim: "namespace" (the
// default) or "off" (a shim per container, as runc's). The shim inherits it from
// containerd's environment.
inline constexpr const char* kSharedShimEnv = "LIBSHIM_WASM_SHARED_SHIM";
// How long a shared shim stays once its last container is gone, in seconds (default 10).
inline constexpr const char* kShimLingerEnv = "LIBSHIM_WASM_SHIM_LINGER";
// The shared shim's group (DaemonOptions::shared_group).
inline constexpr const char* kSharedGroup = "io.libshim.wasm.shared";

class WasmManager final : public shim::oci::CliManager {
 public:
  // `build_engine_root`: where the build expects the engine (the fetch script's root);
  // $LIBSHIM_WASMEDGE_ROOT overrides it (engine.h).
  explicit WasmManager(std::string build_engine_root)
      : shim::oci::CliManager(kRuntimeName, "runc"),
        build_engine_root_(std::move(build_engine_root)) {}

  // The runc shim's options, and one shim for the ungrouped containers of a namespace
  // (kSharedShimEnv): the engine is loaded once, and a container's start is then a fork
  // of the loaded engine. Throws std::invalid_argument on a malformed setting.
  shim::DaemonOptions daemon_options(const shim::StartContext& context) const override;
  // The runc shim's info, plus the engine's annotations (or why it is not usable).
  shim::Status info(const shim::ActionContext& context, const std::optional<shim::pb::Any>& options,
                    containerd::types::RuntimeInfo* info) const override;
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override;

 private:
  std::string build_engine_root_;
};

}  // namespace shim_wasm
