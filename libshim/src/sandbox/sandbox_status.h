// What SandboxStatus answers, from the record alone (no vendor call): containerd's CRI
// asks before every container create and, for every pod, within its 5 s restart
// recovery (internal/cri/server/container_create.go, restart.go).
#pragma once

#include <string_view>

#include <boost/json/object.hpp>

#include "sandbox/sandbox_record.h"

namespace shim {

// The CRI PodSandboxState names CRI maps (internal/cri/server/sandbox_status.go,
// toCRISandboxStatus); any other string would read as NOTREADY.
inline constexpr std::string_view kSandboxReady = "SANDBOX_READY";
inline constexpr std::string_view kSandboxNotReady = "SANDBOX_NOTREADY";

// sandbox_id, pid, state, created_at (the start's time; absent before it, so CRI falls
// back to its own record, which it does for 0) and exited_at (Go's zero time while the
// sandbox has not exited, as the task API's).
sandbox_api::SandboxStatusResponse status_response(const SandboxRecord& record);

// The JSON object SandboxStatus(verbose) answers under the "info" key: the plug-in's
// `details` members, then libshim's (id, pid, state, bundle, netnsPath, createdAt,
// startedAt, exitedAt, exitStatus; they win over a detail of the same name).
// containerd 2.4's CRI decodes it into its SandboxInfo (pid: a number), 2.1 passes it on.
std::string info_json(const SandboxRecord& record, boost::json::object details);

}  // namespace shim
