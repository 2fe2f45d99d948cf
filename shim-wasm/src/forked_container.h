// A Wasm container whose processes the zygote makes (wasm_zygote.h, fork_plan.h): no
// runc and no engine load per container. Its cgroup is the shim's own
// (shim/linux/container_cgroup.h), so libshim's defaults answer Stats, Pids and OOM
// events from it, and Pause and Resume freeze it. A module exec comes from the zygote, a
// native exec from the shim's spawner; both enter the init's namespaces and cgroup.
//
// Threading: as shim::Instance (create and start never at once; exec alongside).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "fork_plan.h"
#include "shim/linux/container_cgroup.h"
#include "shim/process/spawner.h"
#include "shim/runtime.h"
#include "shim/service_context.h"
#include "wasm_zygote.h"

namespace shim_wasm {

class ForkedContainer final : public shim::Instance {
 public:
  ForkedContainer(shim::ServiceContext& context, WasmZygote& zygote, std::string rootfs);

  // Create: makes the cgroup and the held init from `plan` (plan_init()). Unimplemented
  // (a resource the shim's cgroup cannot apply) before anything was made: the caller may
  // hand the container to runc.
  shim::Status launch(ForkPlan plan, std::uint32_t* pid);

  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override;
  shim::Status start(std::uint32_t* pid) override;
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override;
  shim::Status remove() override;
  shim::Status pause() override;
  shim::Status resume() override;
  shim::Status update(std::string_view resources_json) override;
  shim::Status checkpoint(const shim::CheckpointConfig& config) override;

 private:
  shim::ServiceContext& context_;
  WasmZygote& zygote_;
  std::string rootfs_;
  shim::ContainerCgroup cgroup_;
  shim::SpawnedProcess init_;  // its handle joins execs to the init's namespaces
  // Pause and Resume run one at a time, exec alongside: a child made in a frozen cgroup
  // would freeze before it reports ready (and hold up the zygote).
  std::atomic<bool> paused_{false};
};

}  // namespace shim_wasm
