#include "task/task_upgrade_records.h"

#include <chrono>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "upgrade/state_fields.h"
#include "upgrade/upgrade_support.h"

namespace shim {

namespace json = boost::json;
using Fields = upgrade::StateFields;

namespace {

json::object save_process(const TaskProcess& process) {
  json::object saved{{"id", process.id},
                     {"exec_id", process.exec_id},
                     {"stdin", process.stdio.stdin},
                     {"stdout", process.stdio.stdout},
                     {"stderr", process.stdio.stderr},
                     {"terminal", process.stdio.terminal},
                     {"spec", process.spec_json},
                     {"state", static_cast<int>(process.state)},
                     {"pid", static_cast<std::int64_t>(process.pid)},
                     {"exit_published", process.exit_published}};
  if (process.exit) saved["exit"] = upgrade::saved_exit(*process.exit);
  return saved;
}

Status load_process(const json::value& saved, const std::string& where, TaskProcess* process) {
  Fields fields(saved, where);
  process->id = fields.text("id");
  process->exec_id = fields.text("exec_id");
  process->stdio = StdioSpec{fields.text("stdin"), fields.text("stdout"), fields.text("stderr"),
                             fields.flag("terminal")};
  process->spec_json = fields.text("spec");
  std::int64_t state = fields.number("state");
  if (state < 0 || state > static_cast<int>(ProcessState::kStopped))
    fields.fail("state", "a state");
  process->state = static_cast<ProcessState>(state);
  process->pid = static_cast<std::uint32_t>(fields.number("pid"));
  process->exit_published = fields.flag("exit_published");
  if (const json::value* exit = fields.object("exit", /*optional=*/true)) {
    Fields exit_fields(*exit, where + ".exit");
    process->exit = upgrade::restored_exit(exit_fields);
    if (!exit_fields.status().ok()) return exit_fields.status();
  }
  return fields.status();
}

json::object save_config(const ContainerConfig& config) {
  json::object saved{{"id", config.id},
                     {"bundle", config.bundle},
                     {"rootfs", config.rootfs},
                     {"spec", config.spec},
                     {"checkpoint", config.checkpoint},
                     {"parent_checkpoint", config.parent_checkpoint},
                     {"terminal", config.terminal}};
  if (config.options) {
    saved["options"] = json::object{{"type_url", config.options->type_url()},
                                    {"value_hex", upgrade::hex(config.options->value())}};
  }
  return saved;
}

Status load_config(const json::value& saved, const std::string& where, ContainerConfig* config) {
  Fields fields(saved, where);
  config->id = fields.text("id");
  config->bundle = fields.text("bundle");
  config->rootfs = fields.text("rootfs");
  if (const json::value* spec = fields.object("spec")) config->spec = spec->as_object();
  config->checkpoint = fields.text("checkpoint");
  config->parent_checkpoint = fields.text("parent_checkpoint");
  config->terminal = fields.flag("terminal");
  if (const json::value* options = fields.object("options", /*optional=*/true)) {
    Fields option_fields(*options, where + ".options");
    pb::Any any;
    any.set_type_url(option_fields.text("type_url"));
    std::string bytes;
    if (!upgrade::unhex(option_fields.text("value_hex"), &bytes))
      option_fields.fail("value_hex", "hex");
    any.set_value(bytes);
    if (!option_fields.status().ok()) return option_fields.status();
    config->options = std::move(any);
  }
  return fields.status();
}

json::object save_cgroup(const CgroupPaths& cgroup) {
  json::object controllers;
  for (const auto& [name, dir] : cgroup.controllers) controllers[name] = dir;
  return {{"version", cgroup.version == CgroupVersion::kV2 ? 2 : 1},
          {"controllers", std::move(controllers)},
          {"unified", cgroup.unified}};
}

Status load_cgroup(const json::value& saved, const std::string& where, CgroupPaths* cgroup) {
  Fields fields(saved, where);
  cgroup->version = fields.number("version") == 2 ? CgroupVersion::kV2 : CgroupVersion::kV1;
  cgroup->unified = fields.text("unified");
  if (const json::value* controllers = fields.object("controllers")) {
    for (const auto& [name, dir] : controllers->as_object()) {
      if (!dir.is_string()) {
        fields.fail(fmt::format("controllers.{}", std::string_view(name)), "a string");
        break;
      }
      cgroup->controllers[std::string(name)] = std::string(dir.as_string());
    }
  }
  return fields.status();
}

}  // namespace

json::object save_container(const TaskContainer& container, json::object instance) {
  json::array execs;
  for (const auto& [exec_id, exec] : container.execs) execs.push_back(save_process(*exec));
  json::object saved{{"id", container.id},
                     {"bundle", container.bundle},
                     {"config", save_config(container.holder->config)},
                     {"private_pid_namespace", container.private_pid_namespace},
                     {"init", save_process(container.init)},
                     {"execs", std::move(execs)},
                     {"instance", std::move(instance)}};
  if (container.cgroup) saved["cgroup"] = save_cgroup(*container.cgroup);
  return saved;
}

Status load_container(const json::value& saved, TaskContainer* container, ContainerConfig* config,
                      json::object* instance) {
  Fields fields(saved, "container");
  container->id = fields.text("id");
  const std::string where = fmt::format("container {}", container->id);
  container->bundle = fields.text("bundle");
  container->private_pid_namespace = fields.flag("private_pid_namespace");
  const json::value* config_value = fields.object("config");
  const json::value* init = fields.object("init");
  const json::array* execs = fields.array("execs");
  const json::value* instance_value = fields.object("instance");
  const json::value* cgroup = fields.object("cgroup", /*optional=*/true);
  if (!fields.status().ok()) return fields.status();
  *instance = instance_value->as_object();
  if (Status s = load_config(*config_value, where + ".config", config); !s.ok()) return s;
  if (Status s = load_process(*init, where + ".init", &container->init); !s.ok()) return s;
  for (const json::value& saved_exec : *execs) {
    auto exec = std::make_unique<TaskProcess>();
    if (Status s = load_process(saved_exec, where + ".execs[]", exec.get()); !s.ok()) return s;
    std::string exec_id = exec->exec_id;
    container->execs[exec_id] = std::move(exec);
  }
  if (cgroup != nullptr) {
    CgroupPaths paths;
    if (Status s = load_cgroup(*cgroup, where + ".cgroup", &paths); !s.ok()) return s;
    container->cgroup = std::move(paths);
  }
  return {};
}

}  // namespace shim
