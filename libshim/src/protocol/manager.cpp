#include "shim/manager.h"

namespace shim {

std::string Manager::version() const { return LIBSHIM_VERSION; }

DaemonOptions Manager::daemon_options(const StartContext&) const { return {}; }

Status Manager::info(const ActionContext&, const std::optional<shim::pb::Any>& options,
                     containerd::types::RuntimeInfo* info) const {
  info->set_name(name());
  info->mutable_version()->set_version(version());
  info->mutable_version()->set_revision(revision());
  if (options) *info->mutable_options() = *options;
  return {};
}

std::optional<MountCapabilities> Manager::mount_capabilities(
    const std::optional<shim::pb::Any>&) const {
  return std::nullopt;
}

std::unique_ptr<Reaper> Manager::create_reaper(boost::asio::any_io_executor) { return nullptr; }

std::unique_ptr<SandboxRuntime> Manager::create_sandbox_runtime(ServiceContext&) { return nullptr; }

void Manager::register_services(ttrpc::Router&, ServiceContext&) {}

}  // namespace shim
