// The pod's namespaces, held by the shim process itself: its main thread enters them.
//
// Why the main thread: containerd's CRI (2.0 - 2.4) joins a pod's containers to
// /proc/<sandbox pid>/ns/{net,ipc,uts} (internal/cri/opts/spec_opts.go, WithPodNamespaces),
// and /proc/<pid>/ns/X names the namespaces of the thread-group leader, while setns(2) and
// unshare(2) of net, ipc and uts act on the calling thread only. So the shim's main thread
// (which runs the event loop: protocol/serve.cpp) enters them, and every other thread and
// every process the shim spawns from its pool stays in the host's: the pool's threads are
// moved back as they start (WorkPool::set_thread_start), since a new thread inherits the
// namespaces of the thread that created it (the loop, for most pool threads).
#pragma once

#include <array>
#include <memory>
#include <string>

#include "linux/pod_plan.h"
#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim::linux_pod {

// The calling thread's net, ipc and uts namespaces, kept open to come back to.
class HostNamespaces {
 public:
  // Opens /proc/thread-self/ns/{net,ipc,uts} of the calling thread.
  static shim::Status open(std::shared_ptr<const HostNamespaces>* out);
  // Live upgrade: the three fds (net, ipc, uts), and namespaces from duplicates of them.
  std::array<int, 3> fds() const { return {net_.get(), ipc_.get(), uts_.get()}; }
  static shim::Status from_fds(const std::array<int, 3>& fds,
                               std::shared_ptr<const HostNamespaces>* out);
  // Moves the calling thread into them (setns: allowed in a multithreaded process for
  // these three, with CAP_SYS_ADMIN).
  shim::Status enter() const;

 private:
  shim::UniqueFd net_;
  shim::UniqueFd ipc_;
  shim::UniqueFd uts_;
};

// Whether the calling thread is the process's main thread (gettid() == getpid()).
bool on_main_thread();

// Moves the calling thread (the main thread) into the pod's namespaces, as the pause
// container would have them: the netns at plan.netns_path (or a new one when the pod has
// its own network and CRI gave no path), a new IPC namespace unless the pod uses the
// host's, a new UTS namespace with plan.hostname unless it uses the host's network.
// Errors say which step failed ("enter netns /var/run/netns/cni-x: Invalid argument").
// A failure may leave the thread in some of them; the sandbox is then unusable.
shim::Status enter_pod_namespaces(const PodPlan& plan);

// The inode of /proc/<pid>/ns/<kind> ("self" and "thread-self" work too), 0 if unreadable:
// what tests and details() compare.
unsigned long namespace_inode(const std::string& pid, const std::string& kind);

}  // namespace shim::linux_pod
