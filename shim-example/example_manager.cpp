#include "example_manager.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "example_service.h"
#include "shim/fs.h"

namespace example {
namespace {

// The rootfs the container's processes are chrooted into: config.json's root.path,
// relative to the bundle unless absolute (as ExampleService::create reads it).
std::string rootfs_of(const std::string& bundle) {
  std::string root_path = "rootfs";
  std::string spec_text;
  boost::system::error_code ec;
  boost::json::value spec;
  if (shim::read_file(bundle + "/config.json", &spec_text).ok()) {
    spec = boost::json::parse(spec_text, ec);
  }
  if (const auto* path = ec ? nullptr : spec.find_pointer("/root/path", ec);
      !ec && path != nullptr && path->is_string()) {
    root_path = std::string(path->as_string());
  }
  return root_path.starts_with('/') ? root_path : bundle + "/" + root_path;
}

// init.pid outlives the process: containerd runs `delete` after every task removal, when
// that pid may already belong to an unrelated process. Only a process chrooted into the
// container's rootfs is the container's.
bool runs_in_rootfs(int pid, const std::string& rootfs) {
  std::error_code ec;
  std::filesystem::path root = std::filesystem::read_symlink(fmt::format("/proc/{}/root", pid), ec);
  if (ec) return false;
  std::filesystem::path wanted = std::filesystem::weakly_canonical(rootfs, ec);
  return !ec && root == wanted;
}

}  // namespace

// containerd runs `delete` after every task removal and when a shim died. If the shim
// died, the container's process may still run: kill it, then report it killed (137).
shim::Status ExampleManager::stop(const shim::StopContext& context,
                                  shim::task::DeleteResponse* response) {
  std::string pid_text;
  int pid = -1;
  if (shim::read_file(context.bundle + "/init.pid", &pid_text).ok()) pid = std::atoi(pid_text.c_str());
  if (pid > 0 && runs_in_rootfs(pid, rootfs_of(context.bundle))) ::kill(pid, SIGKILL);
  auto now = std::chrono::system_clock::now().time_since_epoch();
  response->set_pid(static_cast<std::uint32_t>(pid));
  response->set_exit_status(128 + SIGKILL);
  response->mutable_exited_at()->set_seconds(std::chrono::duration_cast<std::chrono::seconds>(now).count());
  return {};
}

std::unique_ptr<shim::TaskService> ExampleManager::create_task_service(shim::ServiceContext& context) {
  return std::make_unique<ExampleService>(context);
}

}  // namespace example
