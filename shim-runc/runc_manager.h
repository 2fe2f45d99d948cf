// RuncManager: the runc shim's answers to the binary protocol: its name, the shim cgroup
// from the runtime options, the `delete` action's clean-up, -info, and its Runtime.
#pragma once

#include "shim/runtime_manager.h"

namespace runc_shim {

class RuncManager final : public shim::RuntimeManager {
 public:
  std::string name() const override { return "io.containerd.runc.v2"; }
  shim::DaemonOptions daemon_options(const shim::StartContext& context) const override;
  shim::Status cleanup(const shim::ActionContext& context, std::int64_t* init_pid) override;
  shim::Status info(const shim::ActionContext& context, const std::optional<shim::pb::Any>& options,
                    containerd::types::RuntimeInfo* info) const override;
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& context) override;
};

}  // namespace runc_shim
