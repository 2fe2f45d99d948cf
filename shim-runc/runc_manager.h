// RuncManager: the runc shim's answers to the binary protocol: its name, the shim cgroup
// from the runtime options, the `delete` action's cleanup and -info.
#pragma once

#include "shim/manager.h"

namespace runc_shim {

class RuncManager final : public shim::Manager {
 public:
  std::string name() const override { return "io.containerd.runc.v2"; }
  shim::DaemonOptions daemon_options(const shim::StartContext& context) const override;
  shim::Status stop(const shim::StopContext& context, shim::task::DeleteResponse* response) override;
  std::unique_ptr<shim::TaskService> create_task_service(shim::ServiceContext& context) override;
};

}  // namespace runc_shim
