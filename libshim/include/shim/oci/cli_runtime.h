// The process tier over a runc-compatible OCI runtime CLI (runc, crun, runsc, youki):
// CliRuntime opens one CliInstance per container, which drives the CLI with the command
// lines and errors of containerd's Go runc shim (shim/oci/cli_client.h) and keeps the
// bundle files that shim keeps (options.json, runtime). Everything else (task state,
// events, stdio, mounts, cgroups, OOM) is libshim's. shim/oci/cli_manager.h makes a whole
// shim of it; a vendor may also serve CliRuntime from a RuntimeManager of its own.
//
// Threading: libshim calls every method on a pool thread (shim/runtime.h); a CliInstance
// changes its own state only in create() and start(), which libshim never runs at once.
#pragma once

#include <memory>
#include <optional>

#include "shim/logger.h"
#include "shim/oci/checkpoint_options.h"
#include "shim/oci/cli_client.h"
#include "shim/oci/runc_options.h"
#include "shim/runtime.h"
#include "shim/service_context.h"

namespace shim::oci {

// One container driven through the CLI: each method is the Go shim's CLI call for it
// (create/start, or restore at Start from a checkpoint; exec; kill; delete; pause; resume;
// update; checkpoint; ps), with its error texts. stats() is libshim's default (the
// cgroup), as in Go.
class CliInstance final : public shim::Instance {
 public:
  // The container `config` (which outlives it) with the decoded runtime `options`.
  CliInstance(const shim::ContainerConfig& config, RuncOptions options, CliClient runc);

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
  // runc: Unimplemented, so libshim reads the init's cgroup as `runc ps` would (no runc
  // per call); any other CLI: `<cli> ps --format json`.
  shim::Status pids(std::vector<std::uint32_t>* pids) override;
  // Live upgrade: nothing beyond the config (the CLI keeps the container's state); a
  // container still to be restored from a checkpoint refuses.
  shim::Status save_for_upgrade(boost::json::object* state) override;

 private:
  // `runc restore` at Start of a container created from a checkpoint.
  shim::Status restore(std::uint32_t* pid);

  const shim::ContainerConfig& config_;
  RuncOptions options_;
  CliClient runc_;
  std::optional<RestoreArgs> restore_;  // set by create() from a checkpoint
  shim::ProcessStdio restore_stdio_;
};

// Opens a CliInstance per container (see the file's description).
class CliRuntime final : public shim::Runtime {
 public:
  // `default_binary`: the CLI when the runtime options name none (BinaryName), looked up
  // on PATH unless it has a '/'.
  explicit CliRuntime(shim::ServiceContext& context,
                      std::string default_binary = std::string(kDefaultCliBinary))
      : context_(context), default_binary_(std::move(default_binary)) {}

  // Decodes the runc options (the only error: runc Options bytes that do not decode) and
  // writes <bundle>/options.json and <bundle>/runtime, as the Go shim's NewContainer.
  shim::Status open(const shim::ContainerConfig& config,
                    std::unique_ptr<shim::Instance>* instance) override;
  // Live upgrade: the CliInstance of `config` again, writing no bundle file.
  shim::Status reopen(const shim::ContainerConfig& config, const boost::json::object& saved,
                      std::unique_ptr<shim::Instance>* instance) override;

 private:
  shim::Status make_instance(const shim::ContainerConfig& config, bool write_bundle_files,
                             std::unique_ptr<shim::Instance>* instance);

  shim::ServiceContext& context_;
  std::string default_binary_;
};

}  // namespace shim::oci
