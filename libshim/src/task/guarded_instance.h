// GuardedInstance: the plug-in's Instance as the process tier's task service calls it.
// Every method answers a Status, whatever the plug-in does: an exception becomes an
// Internal error naming the method ("Instance::pause threw: ..."), logged with the
// container id (common/vendor_call.h). The task service then treats it as any failed
// call: the state change it began is undone, the container's queue moves on.
//
// Threading: as shim::Instance (the pool, one changing call at a time per container).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shim/logger.h"
#include "shim/runtime.h"

namespace shim {

class GuardedInstance {
 public:
  GuardedInstance() = default;
  // Guards `instance` (the plug-in's, non-null) of container `id`; `logger` outlives it.
  GuardedInstance(std::unique_ptr<Instance> instance, Logger& logger, std::string id);

  Status stdio_owner(StdioOwner* owner) const;
  Status exit_source(ExitSource* source) const;
  Status create(const ProcessStdio& stdio, std::uint32_t* pid);
  Status start(std::uint32_t* pid);
  Status exec(const ExecConfig& exec, std::uint32_t* pid);
  Status delete_exec(const std::string& exec_id);
  Status kill(int signal, bool all);
  Status kill_exec(const std::string& exec_id, int signal);
  Status resize_terminal(const std::string& exec_id, unsigned width, unsigned height);
  Status remove();
  Status pause();
  Status resume();
  Status update(std::string_view resources_json);
  Status checkpoint(const CheckpointConfig& config);
  Status stats(pb::Any* metrics);
  Status pids(std::vector<std::uint32_t>* pids);
  // On the loop, while a live upgrade holds the shim still (shim/runtime.h).
  Status save_for_upgrade(boost::json::object* state);

 private:
  template <class Call>
  Status guard(std::string_view method, Call&& call) const;

  std::unique_ptr<Instance> instance_;
  Logger* logger_ = nullptr;
  std::string id_;
};

}  // namespace shim
