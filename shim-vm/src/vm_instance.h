// VmInstance: one container of the pod, whose processes run in the pod's VM. The
// container's rootfs (mounted on the host by libshim) and the sources of its bind
// mounts are bind-mounted into the VM's shared directory; the spec goes to the agent
// with their guest paths. Its processes' exits come from the agent (ExitSource::kInstance).
//
// Threading: as shim::Instance (the pool); the relays run on the loop.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pod_vm.h"
#include "process_relay.h"
#include "shim/runtime.h"
#include "shim/service_context.h"

namespace shim_vm {

class VmInstance final : public shim::Instance {
 public:
  VmInstance(shim::ServiceContext& context, const shim::ContainerConfig& config, PodVm& vm);
  ~VmInstance() override;

  shim::ExitSource exit_source() const override { return shim::ExitSource::kInstance; }
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override;
  shim::Status start(std::uint32_t* pid) override;
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override;
  shim::Status delete_exec(const std::string& exec_id) override;
  shim::Status kill(int signal, bool all) override;
  shim::Status kill_exec(const std::string& exec_id, int signal) override;
  shim::Status resize_terminal(const std::string& exec_id, unsigned width,
                               unsigned height) override;
  shim::Status remove() override;
  shim::Status pause() override;
  shim::Status resume() override;
  shim::Status pids(std::vector<std::uint32_t>* pids) override;
  // The container's cgroup in the guest (v2 metrics), as the agent reads it.
  shim::Status stats(shim::pb::Any* metrics) override;

 private:
  // Bind-mounts the rootfs and the spec's bind sources into the shared directory and
  // writes their guest paths into the spec.
  shim::Status share_files(std::string* spec_json);
  void unshare_files();
  std::shared_ptr<ProcessRelay> make_relay(const std::string& exec_id);
  shim::Status signal(const std::string& exec_id, int signal, bool all);

  shim::ServiceContext& context_;
  const shim::ContainerConfig& config_;
  PodVm& vm_;
  std::string host_dir_;              // <shared>/<id>
  std::vector<std::string> mounted_;  // what share_files() mounted, in order
  std::mutex mutex_;                  // relays_: exec and delete_exec run alongside
  std::map<std::string, std::shared_ptr<ProcessRelay>> relays_;  // "" = init
};

}  // namespace shim_vm
