// The runc shim on libshim's process tier: RuncRuntime opens one RuncInstance per
// container, which drives runc (or any runc-compatible CLI named by BinaryName) with the
// Go runc shim's command lines and errors. Everything else (task state, events, stdio,
// mounts, cgroups, OOM) is libshim's.
//
// Threading: libshim calls every method on a pool thread (shim/runtime.h); a RuncInstance
// changes its own state only in create() and start(), which libshim never runs at once.
#pragma once

#include <memory>
#include <optional>

#include "shim-runc/runc/checkpoint_options.h"
#include "shim-runc/runc/options.h"
#include "shim-runc/runc/runc_client.h"
#include "shim/logger.h"
#include "shim/runtime.h"
#include "shim/service_context.h"

namespace runc_shim {

class RuncInstance final : public shim::Instance {
 public:
  RuncInstance(const shim::ContainerConfig& config, RuncOptions options, RuncClient runc);

  shim::StdioOwner stdio_owner() const override;
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override;
  shim::Status start(std::uint32_t* pid) override;
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override;
  shim::Status delete_exec(const std::string& exec_id) override;
  shim::Status kill(int signal, bool all) override;
  shim::Status remove() override;
  shim::Status pause() override;
  shim::Status resume() override;
  shim::Status update(std::string_view resources_json) override;
  shim::Status checkpoint(const shim::CheckpointConfig& config) override;
  shim::Status pids(std::vector<std::uint32_t>* pids) override;

 private:
  // `runc restore` at Start of a container created from a checkpoint.
  shim::Status restore(std::uint32_t* pid);

  const shim::ContainerConfig& config_;
  RuncOptions options_;
  RuncClient runc_;
  std::optional<RestoreArgs> restore_;  // set by create() from a checkpoint
  shim::ProcessStdio restore_stdio_;
};

class RuncRuntime final : public shim::Runtime {
 public:
  explicit RuncRuntime(shim::ServiceContext& context) : context_(context) {}

  // Decodes the runc options (the only error: runc Options bytes that do not decode) and
  // writes <bundle>/options.json and <bundle>/runtime, as the Go shim's NewContainer.
  shim::Status open(const shim::ContainerConfig& config, std::unique_ptr<shim::Instance>* instance) override;

 private:
  shim::ServiceContext& context_;
};

}  // namespace runc_shim
