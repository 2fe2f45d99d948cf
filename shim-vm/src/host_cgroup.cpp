#include "host_cgroup.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "shim/fs.h"
#include "shim/linux/pod_cgroup.h"

namespace shim_vm {

std::string vm_cgroup_of_spec(const boost::json::object& spec, std::string* why) {
  const auto* linux_section = spec.if_contains("linux");
  const auto* path = linux_section != nullptr && linux_section->is_object()
                         ? linux_section->as_object().if_contains("cgroupsPath")
                         : nullptr;
  if (path == nullptr || !path->is_string() || path->as_string().empty()) {
    *why = "the spec has no linux.cgroupsPath";
    return {};
  }
  std::string value(path->as_string());
  if (!value.starts_with('/')) {
    *why = fmt::format(
        "linux.cgroupsPath {:?} is not a cgroupfs path (systemd's form is not "
        "made by this shim)",
        value);
    return {};
  }
  return value;
}

shim::Status decode_pod_config(const shim::SandboxConfig& config,
                               shim::cri::PodSandboxConfig* pod) {
  pod->Clear();
  if (config.options.has_value() && !pod->ParseFromString(config.options->value())) {
    return shim::Status(shim::Code::kInvalidArgument,
                        fmt::format("sandbox {}: options ({}) are not a PodSandboxConfig",
                                    config.id, config.options->type_url()));
  }
  return {};
}

shim::Status vm_cgroup_of_sandbox(const shim::cri::PodSandboxConfig& pod, const std::string& id,
                                  std::string* path, std::string* cgroup_parent, std::string* why) {
  path->clear();
  cgroup_parent->clear();
  const std::string& parent = pod.linux().cgroup_parent();
  if (parent.empty()) {
    *why = "the pod has no cgroup parent";
    return {};
  }
  std::string expanded;
  if (shim::Status s = shim::expand_cgroup_parent(parent, &expanded); !s.ok()) return s;
  *cgroup_parent = parent;
  if (parent.ends_with(".slice") && parent.find('/') == std::string::npos) {  // systemd's
    *why = fmt::format("the cgroup parent {:?} is a systemd slice (not made by this shim)", parent);
    return {};
  }
  *path = fmt::format("{}/libshim-vm-{}", expanded == "/" ? "" : expanded, id);
  return {};
}

shim::Status make_vm_cgroup(const std::string& path, const std::string& record_file,
                            std::unique_ptr<shim::ContainerCgroup>* out, bool* owned) {
  auto cgroup = std::make_unique<shim::ContainerCgroup>();
  shim::CgroupFs fs;
  shim::CgroupVersion version = shim::host_cgroup_version(fs.root);
  shim::CgroupPaths existing;
  *owned = !shim::pod_cgroup_paths(fs, version, path, &existing).ok();
  shim::Status made =
      shim::ContainerCgroup::create(fs, version, path, boost::json::object(), cgroup.get());
  if (!made.ok()) {
    return shim::Status(made.code(),
                        fmt::format("make the pod VM's cgroup {}: {}", path, made.message()));
  }
  if (!*owned) {  // someone else's (ctr run --cgroup): joined, never emptied or removed
    *out = std::move(cgroup);
    return {};
  }
  std::string dirs;
  for (const std::string& procs : cgroup->procs_files())
    dirs += procs.substr(0, procs.rfind('/')) + "\n";
  if (shim::Status s = shim::write_file(record_file, dirs, 0600); !s.ok()) {
    cgroup->remove().ignore_error();
    return s;
  }
  *out = std::move(cgroup);
  return {};
}

namespace {

std::vector<pid_t> cgroup_pids(const shim::ContainerCgroup& cgroup) {
  std::vector<pid_t> pids;
  std::vector<std::string> files = cgroup.procs_files();
  if (files.empty()) return pids;
  std::string text;
  if (!shim::read_file(files.front(), &text).ok()) return pids;
  std::istringstream lines(text);
  for (long pid = 0; lines >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

}  // namespace

shim::Status end_vm_cgroup(shim::ContainerCgroup& cgroup, bool reap_here) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    std::vector<pid_t> left = cgroup_pids(cgroup);
    if (left.empty() || std::chrono::steady_clock::now() > deadline) break;
    // Again each round: a process forked meanwhile (virtiofsd's) is killed too. ECHILD
    // for one that is not the shim's child: someone else reaps it.
    for (pid_t pid : left) {
      ::kill(pid, SIGKILL);
      if (reap_here) ::waitpid(pid, nullptr, WNOHANG);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cgroup.remove();
}

shim::Status remove_cgroup_dirs(const std::string& record) {
  std::istringstream lines(record);
  std::string dir;
  shim::Status first;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::getline(lines, dir)) {
    if (dir.empty()) continue;
    for (;;) {
      std::string procs;
      if (shim::read_file(dir + "/cgroup.procs", &procs).ok()) {
        std::istringstream pids(procs);
        for (long pid = 0; pids >> pid;) ::kill(static_cast<pid_t>(pid), SIGKILL);
      }
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) break;
      if (errno != EBUSY || std::chrono::steady_clock::now() > deadline) {
        if (first.ok())
          first = shim::Status(shim::Code::kUnknown,
                               fmt::format("rmdir {}: {}", dir, std::strerror(errno)));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return first;
}

}  // namespace shim_vm
