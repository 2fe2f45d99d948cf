// The example shim's Manager: its name, and the `delete` action's cleanup.
#pragma once

#include "shim/manager.h"

namespace example {

class ExampleManager final : public shim::Manager {
 public:
  std::string name() const override { return "io.containerd.example.v1"; }
  shim::Status stop(const shim::StopContext& context, shim::task::DeleteResponse* response) override;
  std::unique_ptr<shim::TaskService> create_task_service(shim::ServiceContext& context) override;
};

}  // namespace example
