#include "fork_plan.h"

#include <fcntl.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "shim/linux/cgroup.h"

namespace shim_wasm {
namespace {

namespace json = boost::json;

shim::Status needs_runc(std::string_view what) {
  return shim::Status(shim::Code::kUnimplemented,
                      fmt::format("the zygote does not apply {}", what));
}

const json::value* member(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

// Whether `v` holds something (a non-empty string, array or object, or true).
bool present(const json::value* v) {
  if (v == nullptr) return false;
  if (v->is_string()) return !v->get_string().empty();
  if (v->is_array()) return !v->get_array().empty();
  if (v->is_object()) return !v->get_object().empty();
  if (v->is_bool()) return v->get_bool();
  return true;
}

std::string string_of(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// The spec's fields the zygote cannot apply. Device rules are the device cgroup's: v1
// applies them (the image's /dev is the container's), v2 would need an eBPF program.
shim::Status check_spec(const json::object& spec, const json::object& linux) {
  if (const json::value* process = member(spec, "process"); process && process->is_object()) {
    for (const char* field :
         {"apparmorProfile", "selinuxLabel", "scheduler", "ioPriority", "execCPUAffinity"}) {
      if (present(member(process->get_object(), field)))
        return needs_runc(fmt::format("process.{}", field));
    }
  }
  if (const json::value* root = member(spec, "root"); root && root->is_object()) {
    if (present(member(root->get_object(), "readonly"))) return needs_runc("a read-only root");
  }
  for (const char* field : {"hooks", "domainname"}) {
    if (present(member(spec, field))) return needs_runc(field);
  }
  for (const char* field : {"seccomp", "uidMappings", "gidMappings", "sysctl", "devices",
                            "intelRdt", "personality", "mountLabel", "rootfsPropagation"}) {
    if (present(member(linux, field))) return needs_runc(fmt::format("linux.{}", field));
  }
  if (const json::value* r = member(linux, "resources"); r && r->is_object()) {
    if (const json::value* cpu = member(r->get_object(), "cpu"); cpu && cpu->is_object()) {
      for (const char* field : {"idle", "burst"}) {
        if (present(member(cpu->get_object(), field)))
          return needs_runc(fmt::format("linux.resources.cpu.{}", field));
      }
    }
    if (shim::host_cgroup_version() == shim::CgroupVersion::kV2 &&
        present(member(r->get_object(), "devices")))
      return needs_runc("device rules on cgroup v2");
  }
  return {};
}

// linux.namespaces into new_namespaces and opened namespace files.
shim::Status read_namespaces(const json::object& linux, ForkPlan* plan) {
  static constexpr std::pair<std::string_view, int> kTypes[] = {{"pid", CLONE_NEWPID},
                                                                {"network", CLONE_NEWNET},
                                                                {"mount", CLONE_NEWNS},
                                                                {"ipc", CLONE_NEWIPC},
                                                                {"uts", CLONE_NEWUTS}};
  shim::SpawnRequest& request = plan->spawn.request;
  const json::value* namespaces = member(linux, "namespaces");
  if (namespaces == nullptr || !namespaces->is_array())
    return needs_runc("a spec without namespaces");
  for (const json::value& item : namespaces->get_array()) {
    if (!item.is_object()) return needs_runc("a malformed linux.namespaces");
    std::string type = string_of(item.get_object(), "type");
    std::string path = string_of(item.get_object(), "path");
    if (type == "cgroup") continue;  // the module never sees the cgroup fs
    auto known = std::find_if(std::begin(kTypes), std::end(kTypes),
                              [&](const auto& t) { return t.first == type; });
    if (known == std::end(kTypes)) return needs_runc(fmt::format("a {} namespace", type));
    if (path.empty()) {
      request.new_namespaces |= known->second;
      continue;
    }
    if (known->second == CLONE_NEWNS) return needs_runc("a mount namespace given by path");
    shim::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      return shim::Status(shim::Code::kNotFound, fmt::format("wasm: open {} namespace {}: {}", type,
                                                             path, std::strerror(errno)));
    }
    request.join_namespace_files.emplace_back(known->second, fd.get());
    plan->namespace_files.push_back(std::move(fd));
  }
  if ((request.new_namespaces & CLONE_NEWNS) == 0)
    return needs_runc("a container without its own mount namespace");
  return {};
}

std::vector<std::string> options_of(const json::object& mount) {
  std::vector<std::string> out;
  const json::value* options = member(mount, "options");
  if (options == nullptr || !options->is_array()) return out;
  for (const json::value& o : options->get_array()) {
    if (o.is_string()) out.emplace_back(o.get_string());
  }
  return out;
}

// The spec's mounts: binds and tmpfs are made in the container, proc at /proc (for native
// execs); the kernel file systems a module never reaches (/dev, /sys, mqueue, cgroup)
// are left out, so a native exec sees the image's /dev; anything else needs runc.
shim::Status read_mounts(const json::object& spec, ForkPlan* plan) {
  const json::value* mounts = member(spec, "mounts");
  if (mounts == nullptr) return {};
  if (!mounts->is_array()) return needs_runc("a malformed mounts");
  shim::SpawnRequest& request = plan->spawn.request;
  for (const json::value& item : mounts->get_array()) {
    if (!item.is_object()) return needs_runc("a malformed mounts");
    const json::object& m = item.get_object();
    std::string type = string_of(m, "type");
    std::string destination = string_of(m, "destination");
    std::vector<std::string> options = options_of(m);
    bool bind = type == "bind" || std::count(options.begin(), options.end(), "bind") > 0 ||
                std::count(options.begin(), options.end(), "rbind") > 0;
    if (destination == "/dev" || destination.starts_with("/dev/") || destination == "/sys" ||
        destination.starts_with("/sys/")) {
      if (!bind) continue;
    } else if (type == "proc" && destination == "/proc") {
      // Left out: a fresh /proc would need the spec's masked and read-only paths over it
      // (/proc/sys, /proc/sysrq-trigger...), and a module never reads it.
      continue;
    } else if (!bind && type != "tmpfs") {
      return needs_runc(fmt::format("the {} mount at {}", type, destination));
    }
    // A target under an earlier one's would be resolved before that mount exists: runc
    // resolves each in turn.
    for (const shim::SpawnMount& earlier : request.mounts) {
      if (destination.starts_with(earlier.target + "/") || destination == earlier.target)
        return needs_runc(
            fmt::format("the mount at {} inside the one at {}", destination, earlier.target));
    }
    request.mounts.push_back(
        {string_of(m, "source"), destination, bind ? "bind" : type, std::move(options)});
  }
  return {};
}

shim::Status with_prefix(const shim::Status& s) {
  return s.ok() ? s : shim::Status(s.code(), fmt::format("wasm: {}", s.message()));
}

// The request runs module `entry` in the zygote: no executable is searched.
void run_module(const Entrypoint& entry, shim::SpawnRequest* request) {
  request->path = entry.path;
  if (!request->argv.empty()) request->argv[0] = entry.path;
  request->search_path.reset();
}

}  // namespace

shim::Status plan_init(const json::object& spec, const std::string& rootfs, const Entrypoint& entry,
                       const shim::ProcessStdio& stdio, ForkPlan* plan) {
  *plan = ForkPlan();
  const json::value* linux = member(spec, "linux");
  if (linux == nullptr || !linux->is_object()) return needs_runc("a spec without linux");
  if (shim::Status s = check_spec(spec, linux->get_object()); !s.ok()) return s;
  plan->cgroup_path = string_of(linux->get_object(), "cgroupsPath");
  if (!plan->cgroup_path.starts_with('/') || plan->cgroup_path.find(':') != std::string::npos)
    return needs_runc(fmt::format("the cgroup path {:?}", plan->cgroup_path));
  if (const json::value* r = member(linux->get_object(), "resources"); r && r->is_object())
    plan->resources = r->get_object();
  shim::oci::ProcessTarget target{rootfs, stdio};
  if (shim::Status s =
          shim::oci::spawn_request_from_process(*member(spec, "process"), target, &plan->spawn);
      !s.ok()) {
    return with_prefix(s);
  }
  if (shim::Status s = read_namespaces(linux->get_object(), plan); !s.ok()) return s;
  if (shim::Status s = read_mounts(spec, plan); !s.ok()) return s;
  shim::SpawnRequest& request = plan->spawn.request;
  if ((request.new_namespaces & CLONE_NEWUTS) != 0) request.hostname = string_of(spec, "hostname");
  request.pivot_root = true;
  run_module(entry, &request);
  return {};
}

shim::Status plan_exec(const json::object& process, const std::string& rootfs,
                       const Entrypoint& entry, const shim::ProcessStdio& stdio, int init_pidfd,
                       const std::vector<std::string>& cgroup_procs,
                       shim::oci::ProcessSpawn* spawn) {
  // The root serves the parent's look-ups (HOME from its /etc/passwd); the child is in
  // the container's root by joining its mount namespace.
  shim::oci::ProcessTarget target{rootfs, stdio};
  if (shim::Status s = shim::oci::spawn_request_from_process(json::value(process), target, spawn);
      !s.ok()) {
    return with_prefix(s);
  }
  shim::SpawnRequest& request = spawn->request;
  request.root.clear();
  request.join_pidfd = init_pidfd;
  request.join_namespaces = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET;
  request.cgroup_procs = cgroup_procs;
  if (entry.wasm) run_module(entry, &request);
  return {};
}

}  // namespace shim_wasm
