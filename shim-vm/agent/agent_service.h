// AgentService: the guest agent's side of shim/vm/agent.proto. Containers and their
// processes live here; every handler runs on the agent's one loop and answers later
// where it must wait (WaitProcess, ReadOutput, NextOom).
//
// Threading: the loop only. Spawning blocks the loop until the child is held or exec'd
// (milliseconds); freezing a cgroup and removing one wait on it too (up to a second
// each, as shim/linux/container_cgroup.h does); nothing else blocks.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>

#include "guest_boot.h"
#include "guest_process.h"
#include "shim/linux/container_cgroup.h"
#include "shim/linux/oom_watcher.h"
#include "shim/logger.h"
#include "shim/oci/process_spec.h"
#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/process/subscription.h"
#include "shim/ttrpc/router.h"
#include "shim/ttrpc/typed.h"
#include "shim/vm/agent.pb.h"

namespace shim_vm_agent {

namespace pb = libshim::vm::agent::v1;

class AgentService {
 public:
  // `network_modules`: loaded at SetupNetwork.
  AgentService(boost::asio::any_io_executor executor, shim::Reaper& reaper, shim::Spawner& spawner,
               shim::Logger logger, DeferredModules& network_modules);
  ~AgentService();

  // Registers the Agent service's methods on `router`; `this` must outlive it.
  void register_on(shim::ttrpc::Router& router);

 private:
  struct Container {
    std::string id;
    std::string rootfs;
    boost::json::object spec;
    int namespaces = 0;  // the init's new namespaces: what an exec joins
    std::unique_ptr<shim::ContainerCgroup> cgroup;
    std::unique_ptr<GuestProcess> init;
    std::map<std::string, std::unique_ptr<GuestProcess>> execs;
  };

  template <class Response>
  using Reply = shim::ttrpc::Reply<Response>;

  void hello(pb::HelloRequest request, Reply<pb::HelloResponse> reply);
  void create(pb::CreateContainerRequest request, Reply<pb::ProcessResponse> reply);
  void start(pb::ContainerRequest request, Reply<pb::ProcessResponse> reply);
  void exec(pb::ExecProcessRequest request, Reply<pb::ProcessResponse> reply);
  void signal(pb::SignalProcessRequest request, Reply<pb::Empty> reply);
  void wait(pb::ProcessRequest request, Reply<pb::WaitProcessResponse> reply);
  void delete_process(pb::ProcessRequest request, Reply<pb::Empty> reply);
  void read_output(pb::ReadOutputRequest request, Reply<pb::ReadOutputResponse> reply);
  void write_stdin(pb::WriteStdinRequest request, Reply<pb::Empty> reply);
  void close_stdin(pb::ProcessRequest request, Reply<pb::Empty> reply);
  void resize(pb::ResizeTerminalRequest request, Reply<pb::Empty> reply);
  void pause(pb::ContainerRequest request, Reply<pb::Empty> reply, bool frozen);
  void pids(pb::ContainerRequest request, Reply<pb::ContainerPidsResponse> reply);
  void stats(pb::ContainerRequest request, Reply<pb::ContainerStatsResponse> reply);
  void next_oom(Reply<pb::OomEvent> reply);
  void on_oom(const std::string& id);
  void remove(pb::ContainerRequest request, Reply<pb::Empty> reply);
  void guest_stats(Reply<pb::GuestStatsResponse> reply);

  shim::Status find(const std::string& id, Container** container);
  shim::Status find(const std::string& id, const std::string& exec_id, Container** container,
                    GuestProcess** process);
  // Spawns `request` with `pipes` into `process`, in `cgroup` if any.
  shim::Status spawn(shim::oci::ProcessSpawn& spawn, ProcessPipes pipes, GuestProcess& process);
  void on_exit(const shim::ProcessExit& exit);
  // The running init of the pod's sandbox container (CRI's annotation in `spec`) if it is
  // in this guest and is not container `id` itself.
  const GuestProcess* sandbox_init(const boost::json::object& spec, const std::string& id) const;

  boost::asio::any_io_executor executor_;
  shim::Spawner& spawner_;
  DeferredModules& network_modules_;
  std::map<std::string, std::unique_ptr<Container>> containers_;
  shim::OomWatcher oom_;
  std::deque<std::string> ooms_;                  // OOM kills not asked for yet
  std::vector<Reply<pb::OomEvent>> oom_waiters_;  // NextOom calls waiting for one
  shim::Subscription exits_;
};

}  // namespace shim_vm_agent
