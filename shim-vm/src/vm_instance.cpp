#include "vm_instance.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <boost/json/serialize.hpp>

#include "shim/fs.h"
#include "state_dir.h"

namespace shim_vm {

namespace json = boost::json;
using shim::Code;
using shim::Status;

namespace {

Status sys_error(std::string_view what) {
  return Status(Code::kInternal, fmt::format("{}: {}", what, std::strerror(errno)));
}

bool is_bind(const json::object& mount) {
  const json::value* type = mount.if_contains("type");
  if (type != nullptr && type->is_string() && type->get_string() == "bind") return true;
  const json::value* options = mount.if_contains("options");
  if (options == nullptr || !options->is_array()) return false;
  for (const json::value& o : options->get_array()) {
    if (o.is_string() && (o.get_string() == "bind" || o.get_string() == "rbind")) return true;
  }
  return false;
}

// Makes `target` what `source` is (a directory or an empty file) and binds it there.
Status bind_into(const std::string& source, const std::string& target) {
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) return sys_error(fmt::format("stat {}", source));
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(target).parent_path(), ec);
  if (S_ISDIR(st.st_mode)) {
    if (::mkdir(target.c_str(), 0755) != 0 && errno != EEXIST) return sys_error("mkdir " + target);
  } else {
    int fd = ::open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return sys_error("create " + target);
    ::close(fd);
  }
  if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return sys_error(fmt::format("bind {} to {}", source, target));
  return {};
}

// Whether `path` is `dir` or below it.
bool in_dir(const std::string& path, std::string_view dir) {
  return path == dir ||
         (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

}  // namespace

VmInstance::VmInstance(shim::ServiceContext& context, const shim::ContainerConfig& config,
                       PodVm& vm)
    : context_(context), config_(config), vm_(vm), host_dir_(vm.shared_dir() + "/" + config.id) {}

VmInstance::~VmInstance() {
  for (auto& [exec_id, relay] : relays_) relay->stop();
  unshare_files();
}

Status VmInstance::share_files(std::string* spec_json) {
  json::object spec = config_.spec;
  std::string root = config_.rootfs;
  if (root.empty()) {
    const json::value* r = spec.if_contains("root");
    const json::value* path =
        r != nullptr && r->is_object() ? r->get_object().if_contains("path") : nullptr;
    if (path == nullptr || !path->is_string())
      return Status(Code::kInvalidArgument, "the spec has no root.path");
    root = std::string(path->get_string());
    if (!root.starts_with('/')) root = config_.bundle + "/" + root;
  }
  std::string rootfs = host_dir_ + "/rootfs";
  if (Status s = bind_into(root, rootfs); !s.ok()) return s;
  mounted_.push_back(rootfs);
  json::value& root_entry = spec["root"];
  if (!root_entry.is_object()) root_entry.emplace_object();
  root_entry.get_object()["path"] = vm_.guest_path(rootfs);

  // Bind sources from the host reach the guest through the share too; the kernel's own
  // file systems (/dev, /proc, /sys) are the guest's.
  if (json::value* mounts = spec.if_contains("mounts"); mounts && mounts->is_array()) {
    std::size_t n = 0;
    for (json::value& item : mounts->get_array()) {
      if (!item.is_object() || !is_bind(item.get_object())) continue;
      json::object& m = item.get_object();
      const json::value* source = m.if_contains("source");
      if (source == nullptr || !source->is_string()) continue;
      std::string from(source->get_string());
      if (!from.starts_with('/') || in_dir(from, "/dev") || in_dir(from, "/proc") ||
          in_dir(from, "/sys"))
        continue;
      std::string to = fmt::format("{}/mounts/{}", host_dir_, n++);
      if (Status s = bind_into(from, to); !s.ok()) return s;
      mounted_.push_back(to);
      m["source"] = vm_.guest_path(to);
    }
  }
  *spec_json = json::serialize(spec);
  return {};
}

void VmInstance::unshare_files() {
  for (auto it = mounted_.rbegin(); it != mounted_.rend(); ++it) {
    if (::umount2(it->c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
      context_.logger.warn("unmount from the pod's share",
                           {{"id", config_.id}, {"path", *it}, {"error", std::strerror(errno)}});
    }
  }
  mounted_.clear();
  // Only now empty directories and mount points (never a file of a rootfs) go.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(host_dir_ + "/mounts", ec)) {
    if (entry.is_directory(ec))
      ::rmdir(entry.path().c_str());
    else if (entry.is_regular_file(ec) && entry.file_size(ec) == 0)
      ::unlink(entry.path().c_str());
  }
  ::rmdir((host_dir_ + "/mounts").c_str());
  ::rmdir((host_dir_ + "/rootfs").c_str());
  ::rmdir(host_dir_.c_str());
}

std::shared_ptr<ProcessRelay> VmInstance::make_relay(const std::string& exec_id) {
  return std::make_shared<ProcessRelay>(context_.executor, vm_.agent(), context_.logger, config_.id,
                                        exec_id, config_.events);
}

Status VmInstance::create(const shim::ProcessStdio& stdio, std::uint32_t* pid) {
  if (!config_.checkpoint.empty())
    return Status(Code::kUnimplemented, "checkpoints of VM containers are not supported");
  agent::CreateContainerRequest request;
  request.set_id(config_.id);
  // For the `delete` action after a shim that died: where this container's pod keeps its VM.
  if (Status s =
          shim::write_file_atomic(config_.bundle + "/" + kStateDirFile, vm_.state_dir(), 0600);
      !s.ok())
    return s;
  if (Status s = share_files(request.mutable_spec_json()); !s.ok()) return s;
  request.set_rootfs(vm_.guest_path(host_dir_ + "/rootfs"));
  auto relay = make_relay("");
  if (Status s = relay->take_stdio(stdio); !s.ok()) return s;
  *request.mutable_stdio() = relay->agent_stdio();
  agent::ProcessResponse response;
  if (Status s = vm_.agent()->sync("CreateContainer", request, &response); !s.ok()) return s;
  relay->set_pid(response.pid());
  relay->start();
  vm_.watch_oom(config_.id, config_.events);
  {
    std::lock_guard lock(mutex_);
    relays_[""] = relay;
  }
  *pid = response.pid();
  return {};
}

Status VmInstance::start(std::uint32_t* pid) {
  agent::ContainerRequest request;
  request.set_id(config_.id);
  agent::ProcessResponse response;
  if (Status s = vm_.agent()->sync("StartContainer", request, &response); !s.ok()) return s;
  *pid = response.pid();
  return {};
}

Status VmInstance::exec(const shim::ExecConfig& exec, std::uint32_t* pid) {
  agent::ExecProcessRequest request;
  request.set_id(config_.id);
  request.set_exec_id(exec.exec_id);
  request.set_process_json(exec.spec);
  auto relay = make_relay(exec.exec_id);
  if (Status s = relay->take_stdio(exec.stdio); !s.ok()) return s;
  *request.mutable_stdio() = relay->agent_stdio();
  agent::ProcessResponse response;
  if (Status s = vm_.agent()->sync("ExecProcess", request, &response); !s.ok()) return s;
  relay->set_pid(response.pid());
  relay->start();
  {
    std::lock_guard lock(mutex_);
    relays_[exec.exec_id] = relay;
  }
  *pid = response.pid();
  return {};
}

Status VmInstance::delete_exec(const std::string& exec_id) {
  {
    std::lock_guard lock(mutex_);
    auto it = relays_.find(exec_id);
    if (it != relays_.end()) {
      it->second->stop();
      relays_.erase(it);
    }
  }
  agent::ProcessRequest request;
  request.set_id(config_.id);
  request.set_exec_id(exec_id);
  Status s = vm_.agent()->sync<agent::Empty>("DeleteProcess", request, nullptr);
  return vm_.agent()->connected() ? s : Status();  // a VM that is gone forgot it too
}

Status VmInstance::signal(const std::string& exec_id, int signal, bool all) {
  agent::SignalProcessRequest request;
  request.set_id(config_.id);
  request.set_exec_id(exec_id);
  request.set_signal(static_cast<std::uint32_t>(signal));
  request.set_all(all);
  Status s = vm_.agent()->sync<agent::Empty>("SignalProcess", request, nullptr);
  // The Go shim's text for a process that is gone.
  if (s.code() == Code::kNotFound) return Status(Code::kNotFound, "process already finished");
  return s;
}

Status VmInstance::kill(int signal_number, bool all) { return signal("", signal_number, all); }

Status VmInstance::kill_exec(const std::string& exec_id, int signal_number) {
  return signal(exec_id, signal_number, false);
}

Status VmInstance::remove() {
  // The relays first: the agent drops their calls, which must not read as exits.
  {
    std::lock_guard lock(mutex_);
    for (auto& [exec_id, relay] : relays_) relay->stop();
    relays_.clear();
  }
  agent::ContainerRequest request;
  request.set_id(config_.id);
  Status removed = vm_.agent()->sync<agent::Empty>("RemoveContainer", request, nullptr);
  vm_.forget_oom(config_.id);
  unshare_files();
  // A VM that is gone has nothing left of the container.
  if (!removed.ok() && vm_.agent()->connected()) return removed;
  return {};
}

Status VmInstance::pause() {
  agent::ContainerRequest request;
  request.set_id(config_.id);
  return vm_.agent()->sync<agent::Empty>("PauseContainer", request, nullptr);
}

Status VmInstance::resume() {
  agent::ContainerRequest request;
  request.set_id(config_.id);
  return vm_.agent()->sync<agent::Empty>("ResumeContainer", request, nullptr);
}

Status VmInstance::pids(std::vector<std::uint32_t>* pids) {
  agent::ContainerRequest request;
  request.set_id(config_.id);
  agent::ContainerPidsResponse response;
  if (Status s = vm_.agent()->sync("ContainerPids", request, &response); !s.ok()) return s;
  pids->assign(response.pids().begin(), response.pids().end());
  return {};
}

}  // namespace shim_vm

namespace shim_vm {

Status VmInstance::stats(shim::pb::Any* metrics) {
  agent::ContainerRequest request;
  request.set_id(config_.id);
  agent::ContainerStatsResponse response;
  if (Status s = vm_.agent()->sync("ContainerStats", request, &response); !s.ok()) return s;
  metrics->set_type_url(response.type_url());
  metrics->set_value(response.value());
  return {};
}

}  // namespace shim_vm

namespace shim_vm {

Status VmInstance::resize_terminal(const std::string& exec_id, unsigned width, unsigned height) {
  agent::ResizeTerminalRequest request;
  request.set_id(config_.id);
  request.set_exec_id(exec_id);
  request.set_width(width);
  request.set_height(height);
  Status s = vm_.agent()->sync<agent::Empty>("ResizeTerminal", request, nullptr);
  // An exec created but not started is not in the guest yet: nothing to size, as in Go.
  if (!exec_id.empty() && s.code() == shim::Code::kNotFound) return {};
  return s;
}

}  // namespace shim_vm
