// PodVm: one pod's micro-VM and what serves it on the host: qemu, the virtio-fs daemon
// sharing the pod's directory, and the agent channel (agent_channel.h: virtio-serial or
// vsock). The guest's PID 1 is the agent; the VM is up once the agent announced itself
// and answered Hello.
//
// The shared directory is a bind mount of itself made "shared", so that the containers'
// rootfs bind-mounted under it after the VM booted reach virtiofsd's mount namespace
// (a slave of it) and so the guest.
//
// Threading: boot() and stop() block (a pool thread); the agent client is thread-safe.
// qemu and virtiofsd are spawned from the loop thread: their parent-death signal fires
// when the spawning *thread* ends, and pool threads retire when idle.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "agent_channel.h"
#include "agent_client.h"
#include "shim/instance_events.h"
#include "shim/linux/container_cgroup.h"
#include "shim/process/exit_future.h"
#include "shim/process/reaper.h"
#include "shim/service_context.h"
#include "shim/status.h"
#include "vm_network.h"
#include "vm_settings.h"

namespace shim_vm {

// Where on the host a pod's VM runs.
struct VmPlacement {
  std::string host_cgroup;  // its host processes' cgroup (host_cgroup.h); "": the shim's
  std::string netns_path;   // the pod's network namespace (vm_network.h); "": no network
};

class PodVm {
 public:
  // Boots the VM whose files live in `state_dir` (created; a short path: sockets are
  // there), its host processes in the cgroup `where.host_cgroup` (made; host_cgroup.h)
  // unless that is empty, with a NIC for each interface of `where.netns_path`. Blocks
  // until the agent answered and set up the network, or fails naming the step, with the
  // end of the guest's console when the guest got that far.
  static shim::Status boot(shim::ServiceContext& context, const VmSettings& settings,
                           const std::string& state_dir, const VmPlacement& where,
                           std::unique_ptr<PodVm>* out);
  ~PodVm();  // stop()

  const std::shared_ptr<AgentClient>& agent() const { return agent_; }
  const std::string& shared_dir() const { return shared_dir_; }
  const std::string& state_dir() const { return state_dir_; }
  // The guest's path of `host_path`, a path under shared_dir().
  std::string guest_path(const std::string& host_path) const;
  const std::string& kernel_release() const { return kernel_release_; }
  const VmSettings& settings() const { return settings_; }
  pid_t qemu_pid() const { return qemu_pid_; }

  // Where the OOM kills the agent reports for container `id` go (until forgotten).
  void watch_oom(const std::string& id, std::shared_ptr<shim::InstanceEvents> events);
  void forget_oom(const std::string& id);

  // Runs `callback` on the loop when qemu ends (a guest that powered off or panicked,
  // or a killed qemu) with the reason; once.
  void on_exit(std::function<void(std::string reason)> callback);

  // Who reaps the killed qemu and virtiofsd, which leave their cgroup only once reaped.
  enum class Reaping {
    kByLoop,  // the shim's reaper, on the loop that still runs
    kHere,    // stop() itself: the loop has stopped (the shim is exiting)
  };
  // Kills qemu and its daemons, removes their cgroup, unmounts the shared directory and
  // removes the state dir.
  void stop(Reaping reaping = Reaping::kByLoop);

  // The `delete` action's clean-up after a shim that died: the same from the state dir
  // alone (pid files, the cgroup's directories, mounts). Nothing, and false, while the pod's shim
  // still runs.
  // *error: what could not be undone (the cgroup, the network redirects), if anything.
  static bool clean_up(const std::string& state_dir, std::string* error);

 private:
  PodVm() = default;
  // Makes (or joins) the VM's host cgroup `path` (host_cgroup.h); none when `path` is
  // empty or the cgroup cannot be made (logged: the VM stays in the shim's cgroup).
  void join_cgroup(const std::string& path);
  // Starts a daemon of the VM (<state dir>/`name`.pid) and waits for its `socket`.
  shim::Status spawn_daemon(const char* name, std::vector<std::string> argv, int log_fd,
                            const std::string& socket,
                            std::chrono::steady_clock::time_point deadline);
  // Starts virtiofsd, the channel's daemon if it has one, then qemu (with the channel and
  // a NIC on each of `network`'s taps).
  shim::Status start_daemons(const VmNetwork& network, const AgentChannel& channel,
                             std::chrono::steady_clock::time_point deadline,
                             shim::ClaimedProcess* qemu);
  // Connects the agent channel, waits for the agent's announcement and says Hello.
  shim::Status connect_agent(AgentChannel& channel, const shim::ClaimedProcess& qemu,
                             std::chrono::steady_clock::time_point deadline);
  // What the callbacks on the loop share with this object: they may run after it is gone.
  struct Shared {
    std::atomic<bool> stopped{false};
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<shim::InstanceEvents>> oom_events;
    std::string hung;  // why the heartbeat killed the VM, if it did (under mutex)
    pid_t qemu = -1;
  };
  // Asks `agent` for the next OOM kill, again and again while it answers.
  static void next_oom(std::shared_ptr<AgentClient> agent, std::shared_ptr<Shared> shared);
  // Every kHeartbeat, a Hello that must answer within kHeartbeatTimeout; a guest that
  // does not (hung, or too starved to serve) is killed, which ends the pod as a crash does.
  static void heartbeat(boost::asio::any_io_executor executor, std::shared_ptr<AgentClient> agent,
                        std::shared_ptr<Shared> shared);

  shim::ServiceContext* context_ = nullptr;
  VmSettings settings_;
  std::string state_dir_;
  std::string shared_dir_;
  std::string netns_path_;    // where the pod's network was plumbed, if it was
  shim::PodNetwork network_;  // what was plumbed there
  std::string kernel_release_;
  pid_t qemu_pid_ = -1;
  shim::ExitFuture qemu_exit_;
  struct Daemon {
    pid_t pid;
    shim::ExitFuture exit;
  };
  std::vector<Daemon> daemons_;  // virtiofsd, the channel's daemon
  std::shared_ptr<AgentClient> agent_;
  std::unique_ptr<shim::ContainerCgroup> cgroup_;  // where qemu and virtiofsd run, if any
  bool cgroup_owned_ = false;                      // made by the shim: emptied, removed
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace shim_vm
