// The process tier's containers as a live upgrade carries them (docs/live-upgrade.md):
// TaskContainer and TaskProcess records to JSON and back. What lives only in the running
// program (the Instance, stdio copies, pidfds, OOM watchers, queued ops, pending replies)
// is not here: the task service makes it again. Internal; any thread.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/status.h"
#include "task/task_records.h"

namespace shim {

// The container's record and config, plus `instance` (its Instance::save_for_upgrade).
boost::json::object save_container(const TaskContainer& container, boost::json::object instance);

// Reads what save_container() wrote: the records into *container (no holder, io or
// handle), the config into *config, the Instance's state into *instance.
// FailedPrecondition naming the field when something is missing or of the wrong type.
Status load_container(const boost::json::value& saved, TaskContainer* container,
                      ContainerConfig* config, boost::json::object* instance);

}  // namespace shim
