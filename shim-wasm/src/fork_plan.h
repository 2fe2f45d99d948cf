// How the zygote (libshim-wasm-zygote, a fork server: shim/process/fork_server.h) makes
// a Wasm container's processes without runc: the SpawnRequest of the init from the OCI
// spec (the spec's namespaces, hostname, bind mounts, root, user, capabilities,
// rlimits), and of a module or native exec joining it.
//
// What the zygote does not apply is Unimplemented, naming it, and the container goes to
// runc instead (wasm_instance.h): seccomp, AppArmor and SELinux labels, scheduler and I/O
// priority, hooks, user and time namespaces, a mount namespace given by path, a read-only
// root, sysctls, extra devices, device rules on cgroup v2, root propagation, mounts other
// than bind and tmpfs or nested in another, a systemd cgroup path. /proc, /dev and /sys
// are not mounted: a module never reads them, and a fresh /proc would need the spec's
// masked paths; the image's /dev is gated by the device cgroup (v1).
//
// Threading: plain functions (blocking: they read the rootfs and open namespace files).
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/oci/process_spec.h"
#include "shim/runtime.h"
#include "shim/status.h"
#include "shim/unique_fd.h"
#include "wasm_spec.h"

namespace shim_wasm {

// The init of a container, ready for the zygote once its cgroup is known.
struct ForkPlan {
  shim::oci::ProcessSpawn spawn;                // request (and pty) of the init
  std::vector<shim::UniqueFd> namespace_files;  // what request.join_namespace_files holds
  std::string cgroup_path;                      // linux.cgroupsPath
  boost::json::object resources;                // linux.resources
};

// The init of the container whose spec is `spec` and host rootfs `rootfs`, running module
// `entry` with `stdio`.
shim::Status plan_init(const boost::json::object& spec, const std::string& rootfs,
                       const Entrypoint& entry, const shim::ProcessStdio& stdio, ForkPlan* plan);

// An exec (`process`, an OCI process) in the container whose init is `init_pidfd`: it
// enters the init's pid, mount, IPC, UTS and network namespaces and `cgroup_procs`.
// For a module (`entry.wasm`) the request is the zygote's; else the shim's spawner execs
// it (its args[0] searched along its PATH inside the container).
shim::Status plan_exec(const boost::json::object& process, const std::string& rootfs,
                       const Entrypoint& entry, const shim::ProcessStdio& stdio, int init_pidfd,
                       const std::vector<std::string>& cgroup_procs,
                       shim::oci::ProcessSpawn* spawn);

}  // namespace shim_wasm
