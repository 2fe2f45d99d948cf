#include "task/guarded_instance.h"

#include "common/vendor_call.h"

namespace shim {

GuardedInstance::GuardedInstance(std::unique_ptr<Instance> instance, Logger& logger, std::string id)
    : instance_(std::move(instance)), logger_(&logger), id_(std::move(id)) {}

template <class Call>
Status GuardedInstance::guard(std::string_view method, Call&& call) const {
  return vendor_call(method, std::forward<Call>(call), logger_, id_);
}

Status GuardedInstance::stdio_owner(StdioOwner* owner) const {
  return guard("Instance::stdio_owner", [&] {
    *owner = instance_->stdio_owner();
    return Status();
  });
}

Status GuardedInstance::create(const ProcessStdio& stdio, std::uint32_t* pid) {
  return guard("Instance::create", [&] { return instance_->create(stdio, pid); });
}

Status GuardedInstance::start(std::uint32_t* pid) {
  return guard("Instance::start", [&] { return instance_->start(pid); });
}

Status GuardedInstance::exec(const ExecConfig& exec, std::uint32_t* pid) {
  return guard("Instance::exec", [&] { return instance_->exec(exec, pid); });
}

Status GuardedInstance::delete_exec(const std::string& exec_id) {
  return guard("Instance::delete_exec", [&] { return instance_->delete_exec(exec_id); });
}

Status GuardedInstance::exit_source(ExitSource* source) const {
  return guard("Instance::exit_source", [&] {
    *source = instance_->exit_source();
    return Status();
  });
}

Status GuardedInstance::kill_exec(const std::string& exec_id, int signal) {
  return guard("Instance::kill_exec", [&] { return instance_->kill_exec(exec_id, signal); });
}

Status GuardedInstance::resize_terminal(const std::string& exec_id, unsigned width,
                                        unsigned height) {
  return guard("Instance::resize_terminal",
               [&] { return instance_->resize_terminal(exec_id, width, height); });
}

Status GuardedInstance::kill(int signal, bool all) {
  return guard("Instance::kill", [&] { return instance_->kill(signal, all); });
}

Status GuardedInstance::remove() {
  return guard("Instance::remove", [&] { return instance_->remove(); });
}

Status GuardedInstance::save_for_upgrade(boost::json::object* state) {
  return guard("Instance::save_for_upgrade", [&] { return instance_->save_for_upgrade(state); });
}

Status GuardedInstance::pause() {
  return guard("Instance::pause", [&] { return instance_->pause(); });
}

Status GuardedInstance::resume() {
  return guard("Instance::resume", [&] { return instance_->resume(); });
}

Status GuardedInstance::update(std::string_view resources_json) {
  return guard("Instance::update", [&] { return instance_->update(resources_json); });
}

Status GuardedInstance::checkpoint(const CheckpointConfig& config) {
  return guard("Instance::checkpoint", [&] { return instance_->checkpoint(config); });
}

Status GuardedInstance::stats(pb::Any* metrics) {
  return guard("Instance::stats", [&] { return instance_->stats(metrics); });
}

Status GuardedInstance::pids(std::vector<std::uint32_t>* pids) {
  return guard("Instance::pids", [&] { return instance_->pids(pids); });
}

}  // namespace shim
