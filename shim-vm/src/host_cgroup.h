// Where the pod's VM (qemu and virtiofsd) runs on the host: in the pod's cgroup, so that
// what kubelet sizes and containerd's CRI reads for the pod's stats counts the VM, as
// Kata's sandbox_cgroup_only does. The guest's containers have cgroups of their own in
// the guest; this is the host's view of the whole pod.
//
//   * task API (a pause container, or ctr): the linux.cgroupsPath of the container whose
//     Create boots the VM (CRI's sandbox container: <cgroup parent>/<pod id>);
//   * sandbox API: <PodSandboxConfig.linux.cgroup_parent, expanded>/libshim-vm-<pod id>.
//
// Only cgroupfs paths are made ("/kubepods/burstable/pod<uid>/..."); a systemd path
// ("slice:prefix:name", or a cgroup parent that is a slice) leaves the VM in the shim's
// cgroup, and so does a cgroup the shim cannot make (a host that does not delegate
// cgroups): the shim logs why.
//
// Threading: blocking file IO: on the pool, or at the shim's exit (~VmRuntime).
#pragma once

#include <memory>
#include <string>

#include <boost/json/object.hpp>

#include "shim/linux/container_cgroup.h"
#include "shim/pb/cri/pod_sandbox_config.pb.h"
#include "shim/sandbox.h"
#include "shim/status.h"

namespace shim_vm {

// The VM's cgroup for a VM booted by a container with `spec`: its linux.cgroupsPath, or
// "" with *why (no cgroupsPath, or one in systemd form).
std::string vm_cgroup_of_spec(const boost::json::object& spec, std::string* why);

// CreateSandbox's options: a runtime.v1.PodSandboxConfig (none: an empty one).
// InvalidArgument for options that are not one.
shim::Status decode_pod_config(const shim::SandboxConfig& config, shim::cri::PodSandboxConfig* pod);

// The VM's cgroup and the pod's cgroup parent for a VM that StartSandbox boots for pod
// `id`: both "" with *why when `pod` has no cgroup parent. InvalidArgument for a cgroup
// parent kubelet would not name.
shim::Status vm_cgroup_of_sandbox(const shim::cri::PodSandboxConfig& pod, const std::string& id,
                                  std::string* path, std::string* cgroup_parent, std::string* why);

// Makes the VM's cgroup `path` with no limits of its own (the pod's are kubelet's, on its
// parent). *owned: it did not exist before (else it is joined as it is: never emptied or
// removed by the shim). An owned one's directories are recorded in `record_file` for
// remove_cgroup_dirs().
shim::Status make_vm_cgroup(const std::string& path, const std::string& record_file,
                            std::unique_ptr<shim::ContainerCgroup>* out, bool* owned);

// Kills every process in the VM's own `cgroup` (again until it is empty, up to 2 s) and
// removes it. With `reap_here` (the shim's loop, whose reaper reaps, has stopped: the
// shim is exiting) the killed processes that are the shim's children are reaped here.
shim::Status end_vm_cgroup(shim::ContainerCgroup& cgroup, bool reap_here);

// The `delete` action's clean-up of a VM's cgroup: kills what is left in the directories
// `record` lists (one a line, as make_vm_cgroup() writes them) and removes them, waiting
// up to 2 s in all; the first error.
shim::Status remove_cgroup_dirs(const std::string& record);

}  // namespace shim_vm
