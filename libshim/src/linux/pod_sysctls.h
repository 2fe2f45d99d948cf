// A pod's sysctls (PodSandboxConfig.linux.sysctls), written by the shim into the pod's
// namespaces as runc writes a pause container's (libcontainer: only namespaced sysctls,
// net.* only with a netns of its own, IPC ones only with an IPC namespace of its own).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim::linux_pod {

// The file under /proc/sys for `key`, relative ("net/ipv4/ip_forward" for
// "net.ipv4.ip_forward"). As in Kubernetes and runc, '.' separates the parts and a '/'
// inside a key stands for a '.' in a name ("net.ipv4.conf.eth0/100.forwarding" ->
// net/ipv4/conf/eth0.100/forwarding). InvalidArgument for an empty part, "." or "..".
shim::Status sysctl_file(std::string_view key, std::string* relative);

// Whether `key` is one a pod may set: namespaced by the network namespace (net.*) or the
// IPC namespace (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*), and the pod has that
// namespace of its own. InvalidArgument naming the key otherwise.
shim::Status check_sysctl(std::string_view key, bool own_network, bool own_ipc);

// check_sysctl() and sysctl_file() of every key.
shim::Status check_sysctls(const std::map<std::string, std::string>& sysctls, bool own_network,
                           bool own_ipc);

// Writes each value into <proc_sys>/<sysctl_file(key)>. net.* files resolve to the netns
// of the thread that opens them, IPC ones to its IPC namespace: call it on the thread that
// entered the pod's namespaces. Errors name the key and the file.
shim::Status write_sysctls(const std::string& proc_sys,
                           const std::map<std::string, std::string>& sysctls);

}  // namespace shim::linux_pod
