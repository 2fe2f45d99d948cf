// The parts of an OCI process that become the child's credentials and limits: `user`,
// `rlimits`, `capabilities`, `oomScoreAdj`. Errors name the field (InvalidArgument).
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim::oci {

// process.user: uid and gid (0 when absent, as Go reads a missing field), additionalGids
// (exactly those groups), umask (0..0777; nullopt when absent).
Status read_user(const boost::json::object& process, SpawnUser* user, std::optional<mode_t>* umask);

// process.rlimits: known types only, each once, soft <= hard.
Status read_rlimits(const boost::json::object& process, std::vector<SpawnRlimit>* rlimits);

// process.capabilities: nullopt when absent (the shim's are kept, as runc keeps its
// own); else every set, a missing one empty. Unknown names are errors; an ambient
// capability must be permitted and inheritable too (the kernel refuses it otherwise).
Status read_capabilities(const boost::json::object& process, std::optional<CapabilitySets>* sets);

// process.oomScoreAdj: -1000..1000, nullopt when absent.
Status read_oom_score_adj(const boost::json::object& process, std::optional<int>* adj);

}  // namespace shim::oci
