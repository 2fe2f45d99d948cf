// The optional parts of shim::Instance: Unimplemented, which the task service either
// answers as such or replaces with its own default (kill, stats, pids).
#include <boost/json.hpp>

#include "shim/runtime.h"
#include "task/task_records.h"

namespace shim {

Status Instance::delete_exec(const std::string&) { return {}; }
Status Instance::kill(int, bool) { return not_implemented("kill"); }
Status Instance::kill_exec(const std::string&, int) { return not_implemented("kill_exec"); }
Status Instance::resize_terminal(const std::string&, unsigned, unsigned) {
  return not_implemented("resize_terminal");
}
Status Instance::pause() { return not_implemented("pause"); }
Status Instance::resume() { return not_implemented("resume"); }
Status Instance::update(std::string_view) { return not_implemented("update"); }
Status Instance::checkpoint(const CheckpointConfig&) { return not_implemented("checkpoint"); }
Status Instance::stats(pb::Any*) { return not_implemented("stats"); }
Status Instance::pids(std::vector<std::uint32_t>*) { return not_implemented("pids"); }
Status Instance::save_for_upgrade(boost::json::object*) {
  return not_implemented("save_for_upgrade");
}
Status Runtime::reopen(const ContainerConfig&, const boost::json::object&,
                       std::unique_ptr<Instance>*) {
  return not_implemented("reopen");
}

bool has_private_pid_namespace(const boost::json::object& spec) {
  if (spec.empty()) return true;  // unknown: do not kill anything extra
  const auto* linux_section = spec.if_contains("linux");
  if (linux_section == nullptr || !linux_section->is_object()) return false;
  const auto* namespaces = linux_section->as_object().if_contains("namespaces");
  if (namespaces == nullptr || !namespaces->is_array()) return false;
  for (const auto& ns : namespaces->as_array()) {
    if (!ns.is_object()) continue;
    const auto* type = ns.as_object().if_contains("type");
    const auto* path = ns.as_object().if_contains("path");
    bool is_pid = type != nullptr && type->is_string() && type->as_string() == "pid";
    bool shared = path != nullptr && path->is_string() && !path->as_string().empty();
    if (is_pid && !shared) return true;
  }
  return false;
}

}  // namespace shim
