// The files CRI bind-mounts into a pod's containers, which in shim mode nobody else
// writes: containerd's CRI mounts <cri root>/sandboxes/<id>/{hostname,hosts,resolv.conf}
// and <cri state>/sandboxes/<id>/shm only if they exist (internal/cri/server/
// container_create.go, containerMounts), and its podsandbox controller writes them for
// pause-container pods (internal/cri/server/podsandbox/sandbox_run_linux.go,
// setupSandboxFiles). The pod writes the same bytes and removes them at shutdown.
#pragma once

#include <string>
#include <vector>

#include "shim/pb/cri/pod_sandbox_config.pb.h"
#include "shim/status.h"

namespace shim::linux_pod {

// containerd's root and state directories (`root`, `state` of its config).
struct ContainerdDirs {
  std::string root;
  std::string state;
};

// Finds them from a sandbox bundle: the sandbox controller makes the bundle
// <state>/io.containerd.sandbox.controller.v1.shim/<ns>/<id> with a `work` symlink to
// <root>/io.containerd.sandbox.controller.v1.shim/<ns>/<id> (core/runtime/v2/bundle.go,
// NewBundle; plugins/sandbox/controller.go). FailedPrecondition saying what is missing
// when the bundle does not look like that.
shim::Status containerd_dirs_from_bundle(const std::string& bundle, ContainerdDirs* dirs);

// Where CRI looks for the pod's files (internal/cri/server/helpers.go): its root and state
// are <root>/io.containerd.grpc.v1.cri and <state>/io.containerd.grpc.v1.cri.
struct PodFilePaths {
  std::string root_dir;     // <cri root>/sandboxes/<id>
  std::string state_dir;    // <cri state>/sandboxes/<id>
  std::string hostname;     // <root_dir>/hostname
  std::string hosts;        // <root_dir>/hosts
  std::string resolv_conf;  // <root_dir>/resolv.conf
  std::string shm;          // <state_dir>/shm

  static PodFilePaths of(const ContainerdDirs& dirs, const std::string& id);
};

// The host files copied when the pod brings none (tests point them elsewhere).
struct HostFiles {
  std::string hosts = "/etc/hosts";
  std::string resolv_conf = "/etc/resolv.conf";
};

// resolv.conf from a DNSConfig, line for line as podsandbox's parseDNSOptions: "search
// a b\n", one "nameserver x\n" per server, "options o p\n"; lines with nothing are left out.
std::string resolv_conf_from_dns(const shim::cri::DNSConfig& dns);

// Writes hostname (config.hostname or `host_name`, plus "\n"), hosts (a copy of the
// host's), resolv.conf (from dns_config when set, else a copy of the host's), all 0644,
// and mounts a tmpfs "shm" (mode=1777,size=64 MiB; nosuid, nodev, noexec) on `shm` unless
// `host_ipc`. `written` lists each file or mount made, also on failure (for removal).
shim::Status write_pod_files(const PodFilePaths& paths, const shim::cri::PodSandboxConfig& config,
                             const std::string& host_name, const HostFiles& host, bool host_ipc,
                             std::vector<std::string>* written);

// Unmounts `shm` if mounted, removes the files and the shm dir, then the two sandbox dirs
// if nothing else is left in them (CRI made them and removes what remains). Missing ones
// are fine; other errors are returned after everything was tried (the first one).
shim::Status remove_pod_files(const PodFilePaths& paths);

}  // namespace shim::linux_pod
