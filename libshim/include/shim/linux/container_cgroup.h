// A container's cgroup made by the shim itself, for runtimes that make containers without
// an OCI CLI (a fork server's children, shim/process/fork_server.h): created from the
// spec's linux.cgroupsPath (cgroupfs form) and linux.resources as runc's cgroupfs driver
// does, joined by the container's processes (SpawnRequest::cgroup_procs), frozen for
// Pause, removed at Delete. Stats, Pids and OOM events then come from libshim's defaults,
// which read the init's cgroup.
//
// Applied resources: memory (limit, reservation, swap, swappiness, disableOOMKiller), cpu
// (shares, quota, period, cpus, mems), pids (limit), devices (v1 rules; on v2 device
// rules are eBPF programs and are not applied). Anything else set in linux.resources
// (blockIO, hugepageLimits, network, rdma, unified, cpu realtime) is Unimplemented,
// naming the field, so a runtime can hand that container to runc instead.
//
// Threading: blocking file IO, on the work pool; one object per container, not shared.
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/linux/cgroup.h"
#include "shim/status.h"

namespace shim {

// One container's cgroup, made and removed by the shim (see the file's description).
class ContainerCgroup {
 public:
  // Makes the cgroup `path` ("/default/ctr1": absolute, cgroupfs form; a systemd
  // "slice:prefix:name" or a relative path is InvalidArgument) under `fs.root` for
  // `version` (v1: under each mounted controller hierarchy; cpuset's cpus and mems
  // copied down into new levels, as runc does), then applies `resources` (OCI
  // LinuxResources; an empty object applies nothing). On error the leaf it made is removed
  // (levels above it stay, as they do at remove()). An existing leaf is used as it is.
  static Status create(const CgroupFs& fs, CgroupVersion version, const std::string& path,
                       const boost::json::object& resources, ContainerCgroup* out);

  // The cgroup.procs files a process writes itself into to join (v1: one per controller).
  std::vector<std::string> procs_files() const;
  // Update: applies `resources` (the same fields as create()).
  Status update(const boost::json::object& resources);
  // Pause and Resume: the freezer (v1 freezer.state, v2 cgroup.freeze), waiting up to a
  // second until the kernel says the whole cgroup is frozen.
  Status freeze();
  Status thaw();
  // Removes the leaf directories create() made (once the processes are gone; an EBUSY
  // cgroup is tried again for up to a second). The levels above them stay, as with runc.
  Status remove();

  // The cgroup's directories.
  const CgroupPaths& paths() const { return paths_; }

 private:
  // freeze() and thaw(): cgroup.freeze (v2) or freezer.state (v1), then the wait.
  Status set_frozen(bool frozen);

  CgroupFs fs_;
  CgroupPaths paths_;
  std::vector<std::string> created_;  // the leaf directories create() made
};

}  // namespace shim
