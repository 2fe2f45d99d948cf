#include "container_plan.h"

#include <sched.h>

#include <algorithm>

#include <fmt/format.h>
#include <boost/json/parse.hpp>

namespace shim_vm_agent {
namespace {

namespace json = boost::json;

std::string string_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// New namespaces into request->new_namespaces; those given by a path (the pod's, on the
// host) into *pod_namespaces: the caller joins the pod's in the guest.
void read_namespaces(const json::object& linux, shim::SpawnRequest* request, int* pod_namespaces) {
  static constexpr std::pair<std::string_view, int> kTypes[] = {{"pid", CLONE_NEWPID},
                                                                {"network", CLONE_NEWNET},
                                                                {"mount", CLONE_NEWNS},
                                                                {"ipc", CLONE_NEWIPC},
                                                                {"uts", CLONE_NEWUTS}};
  const json::value* namespaces = linux.if_contains("namespaces");
  if (namespaces != nullptr && namespaces->is_array()) {
    for (const json::value& item : namespaces->get_array()) {
      if (!item.is_object()) continue;
      std::string type = string_of(item.get_object(), "type");
      bool by_path = !string_of(item.get_object(), "path").empty();
      for (const auto& [name, flag] : kTypes) {
        // The pod's network is the VM's: a container never gets a network of its own.
        if (name != type || flag == CLONE_NEWNET) continue;
        if (by_path) {
          if (flag != CLONE_NEWNS) *pod_namespaces |= flag;
        } else {
          request->new_namespaces |= flag;
        }
      }
    }
  }
  request->new_namespaces |= CLONE_NEWNS;  // its root is pivoted in a mount namespace
}

std::vector<std::string> options_of(const json::object& mount) {
  std::vector<std::string> out;
  const json::value* options = mount.if_contains("options");
  if (options == nullptr || !options->is_array()) return out;
  for (const json::value& o : options->get_array()) {
    if (o.is_string()) out.emplace_back(o.get_string());
  }
  return out;
}

bool under(const std::string& path, std::string_view dir) {
  return path == dir ||
         (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

void read_mounts(const json::object& spec, shim::SpawnRequest* request) {
  const json::value* mounts = spec.if_contains("mounts");
  if (mounts == nullptr || !mounts->is_array()) return;
  for (const json::value& item : mounts->get_array()) {
    if (!item.is_object()) continue;
    const json::object& m = item.get_object();
    std::string type = string_of(m, "type");
    std::string destination = string_of(m, "destination");
    std::vector<std::string> options = options_of(m);
    if (type == "proc" && destination == "/proc") {
      request->mount_proc = true;
      continue;
    }
    if (under(destination, "/dev")) {
      if (destination == "/dev") request->mount_dev = true;
      continue;  // pts, shm and mqueue: the fresh /dev has them
    }
    if (type == "cgroup" || type == "cgroup2" || under(destination, "/sys/fs/cgroup")) continue;
    bool bind = type == "bind" || std::count(options.begin(), options.end(), "bind") > 0 ||
                std::count(options.begin(), options.end(), "rbind") > 0;
    request->mounts.push_back(
        {string_of(m, "source"), destination, bind ? "bind" : type, std::move(options)});
  }
}

// The process without its terminal: the agent makes the pty itself (guest_process.h)
// and gives its slave as fds 0-2, where runc would send the master to a console socket.
json::value without_terminal(const json::value& process, unsigned* rows, unsigned* columns) {
  json::value copy = process;
  *rows = *columns = 0;
  if (!copy.is_object()) return copy;
  json::object& o = copy.get_object();
  if (const json::value* size = o.if_contains("consoleSize"); size && size->is_object()) {
    const json::value* h = size->get_object().if_contains("height");
    const json::value* w = size->get_object().if_contains("width");
    if (h && w && h->is_number() && w->is_number()) {
      // A size that is no small whole number is no size (it must not throw here).
      boost::system::error_code ec_rows, ec_columns;
      unsigned r = h->to_number<unsigned>(ec_rows), c = w->to_number<unsigned>(ec_columns);
      if (!ec_rows && !ec_columns) {
        *rows = r;
        *columns = c;
      }
    }
  }
  o.erase("terminal");
  o.erase("consoleSize");
  return copy;
}

shim::Status with_prefix(const shim::Status& s) {
  return s.ok() ? s : shim::Status(s.code(), fmt::format("agent: {}", s.message()));
}

}  // namespace

shim::Status plan_init(const json::object& spec, const std::string& rootfs,
                       const shim::ProcessStdio& stdio, shim::oci::ProcessSpawn* spawn,
                       ConsoleSize* size, int* pod_namespaces) {
  *pod_namespaces = 0;
  const json::value* process = spec.if_contains("process");
  if (process == nullptr) return shim::Status(shim::Code::kInvalidArgument, "spec has no process");
  shim::oci::ProcessTarget target{rootfs, stdio};
  json::value plain = without_terminal(*process, &size->rows, &size->columns);
  if (auto s = shim::oci::spawn_request_from_process(plain, target, spawn); !s.ok())
    return with_prefix(s);
  shim::SpawnRequest& request = spawn->request;
  if (const json::value* linux = spec.if_contains("linux"); linux && linux->is_object())
    read_namespaces(linux->get_object(), &request, pod_namespaces);
  else
    request.new_namespaces = CLONE_NEWNS | CLONE_NEWPID;
  read_mounts(spec, &request);
  if ((request.new_namespaces & CLONE_NEWUTS) != 0) request.hostname = string_of(spec, "hostname");
  request.pivot_root = true;
  return {};
}

shim::Status plan_exec(const std::string& process_json, const std::string& rootfs,
                       const shim::ProcessStdio& stdio, int init_pidfd, int namespaces,
                       shim::oci::ProcessSpawn* spawn, ConsoleSize* size) {
  shim::oci::ProcessTarget target{rootfs, stdio};
  boost::system::error_code ec;
  json::value process = json::parse(process_json, ec);
  if (ec) {
    return shim::Status(shim::Code::kInvalidArgument,
                        fmt::format("agent: the exec's process is not JSON: {}", ec.message()));
  }
  json::value plain = without_terminal(process, &size->rows, &size->columns);
  if (auto s = shim::oci::spawn_request_from_process(plain, target, spawn); !s.ok())
    return with_prefix(s);
  shim::SpawnRequest& request = spawn->request;
  request.root.clear();  // joining the mount namespace puts it in the container's root
  request.join_pidfd = init_pidfd;
  request.join_namespaces = namespaces;
  return {};
}

}  // namespace shim_vm_agent
