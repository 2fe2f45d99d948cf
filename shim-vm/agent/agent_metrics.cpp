// AgentService's metrics and OOM calls: the guest's memory and CPU, a container's (or
// the whole pod's) cgroup metrics, and the OOM kills the host asks for one at a time.
#include <cstdint>
#include <fstream>
#include <sstream>

#include "agent_service.h"
#include "shim/fs.h"

namespace shim_vm_agent {

using shim::Status;

void AgentService::guest_stats(Reply<pb::GuestStatsResponse> reply) {
  pb::GuestStatsResponse response;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemTotal:") response.set_memory_total_bytes(value * 1024);
    if (key == "MemAvailable:") response.set_memory_available_bytes(value * 1024);
  }
  std::string stat;
  if (shim::read_file("/sys/fs/cgroup/cpu.stat", &stat).ok()) {
    std::istringstream in(stat);
    std::uint64_t usec = 0;
    while (in >> key >> usec) {
      if (key == "usage_usec") response.set_cpu_usage_usec(usec);
    }
  }
  reply(response);
}

void AgentService::stats(pb::ContainerRequest request, Reply<pb::ContainerStatsResponse> reply) {
  // No id: the parent of every container's cgroup, the whole pod (the root cgroup has
  // no memory.current).
  shim::CgroupPaths root{.version = shim::CgroupVersion::kV2,
                         .unified = "/sys/fs/cgroup/containers"};
  const shim::CgroupPaths* paths = &root;
  if (!request.id().empty()) {
    Container* container = nullptr;
    if (Status s = find(request.id(), &container); !s.ok()) return reply.fail(s);
    paths = &container->cgroup->paths();
  }
  shim::pb::Any metrics;
  if (Status s = shim::collect_metrics_any(shim::CgroupFs{}, paths, &metrics); !s.ok())
    return reply.fail(s);
  pb::ContainerStatsResponse response;
  response.set_type_url(metrics.type_url());
  response.set_value(metrics.value());
  reply(response);
}

void AgentService::on_oom(const std::string& id) {
  if (oom_waiters_.empty()) {
    ooms_.push_back(id);
    return;
  }
  pb::OomEvent event;
  event.set_id(id);
  oom_waiters_.front()(event);
  oom_waiters_.erase(oom_waiters_.begin());
}

void AgentService::next_oom(Reply<pb::OomEvent> reply) {
  if (ooms_.empty()) {
    oom_waiters_.push_back(std::move(reply));
    return;
  }
  pb::OomEvent event;
  event.set_id(ooms_.front());
  ooms_.pop_front();
  reply(event);
}

}  // namespace shim_vm_agent
