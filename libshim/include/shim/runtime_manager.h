// RuntimeManager: the Manager of a shim built on the process tier (shim/runtime.h). A
// vendor names the shim, makes its Runtime, and says how to clean up after a dead shim;
// libshim serves the whole task API over the Runtime.
//
//   class MyManager final : public shim::RuntimeManager {
//    public:
//     std::string name() const override { return "io.containerd.my.v1"; }
//     std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext& c) override {
//       return std::make_unique<MyRuntime>(c);
//     }
//   };
//   int main(int argc, char** argv) { MyManager m; return shim::run(argc, argv, m); }
//
// Threading: create_runtime() runs once on the daemon's main thread before it serves;
// cleanup() runs in the short-lived `delete` action (no event loop; it may block).
// Either may throw: the exception is reported as an error naming the method.
#pragma once

#include <cstdint>
#include <memory>

#include "shim/manager.h"
#include "shim/runtime.h"

namespace shim {

class RuntimeManager : public Manager {
 public:
  // The daemon's Runtime; `context` outlives it.
  virtual std::unique_ptr<Runtime> create_runtime(ServiceContext& context) = 0;

  // The `delete` action: containerd runs it for a task whose shim is gone. Undo what the
  // runtime left of container context.identity.id (e.g. `runc delete --force`) and tell
  // the init's pid if known (-1 otherwise). libshim then unmounts <bundle>/rootfs and
  // answers that the init was killed (exit status 137) now, as containerd's shims do.
  // An error (or exception) is logged and the unmount still runs; the action then fails
  // with that error. The default does nothing and knows no pid.
  virtual Status cleanup(const ActionContext& context, std::int64_t* init_pid);

  Status stop(const ActionContext& context, task::DeleteResponse* response) final;
  std::unique_ptr<TaskService> create_task_service(ServiceContext& context) final;
};

}  // namespace shim
