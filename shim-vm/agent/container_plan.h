// How the agent makes a container's processes from the spec the host sent: the init in
// new namespaces (those the spec asks for; one given by a host path is the pod's, joined
// from the pod's sandbox container in the guest, else the VM's own), pivoted into the container's
// root on the shared directory, with /proc, a fresh /dev and the spec's other mounts; an exec joins
// the init's namespaces.
//
// The VM is the isolation boundary here, as in Kata: seccomp, AppArmor and SELinux labels,
// hooks and the cgroup mount are not applied inside it. Mounts nested in /dev or /proc,
// and mqueue, come from the fresh /dev and /proc.
//
// Threading: plain functions (blocking: they read the rootfs).
#pragma once

#include <string>

#include <boost/json/object.hpp>

#include "shim/oci/process_spec.h"
#include "shim/status.h"

namespace shim_vm_agent {

// A process's terminal size from its consoleSize (0 x 0: none given).
struct ConsoleSize {
  unsigned rows = 0;
  unsigned columns = 0;
};

// The init of the container with `spec` whose root is `rootfs` (a guest path). Its
// `terminal` is left to the caller (the pty's slave as fds 0-2), sized as *size says.
// *pod_namespaces: the CLONE_NEW* types (pid, IPC, UTS) the spec gives by a path, i.e.
// the pod's: the caller joins them from the pod's sandbox container in the guest.
shim::Status plan_init(const boost::json::object& spec, const std::string& rootfs,
                       const shim::ProcessStdio& stdio, shim::oci::ProcessSpawn* spawn,
                       ConsoleSize* size, int* pod_namespaces);

// An exec, `process_json` (an OCI process), entering the namespaces `namespaces` of the
// init whose pidfd is `init_pidfd`; `rootfs` serves the look-ups (HOME).
shim::Status plan_exec(const std::string& process_json, const std::string& rootfs,
                       const shim::ProcessStdio& stdio, int init_pidfd, int namespaces,
                       shim::oci::ProcessSpawn* spawn, ConsoleSize* size);

}  // namespace shim_vm_agent
