// ChildContainer: what the parent prepares for a child's container pieces (SpawnRequest's
// cgroup_procs, join_namespace_files, hostname, mounts, pivot_root, run_in_child),
// kept alive until the child has exec'd or runs: the child only reads what is filled in.
#pragma once

#include <string>
#include <vector>

#include "process/spawn_child.h"
#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim::spawn {

class ChildContainer {
 public:
  // Checks `request`'s container fields (InvalidArgument naming the field), parses the
  // mounts' options and resolves and creates their targets inside its root. Once per
  // object.
  Status prepare(const SpawnRequest& request);
  // Points `plan`'s container fields at this object's storage.
  void fill(ChildPlan* plan) const;
  // The fd of a CLONE_NEWPID namespace file, which the parent's thread enters; -1: none.
  int pid_namespace_fd() const { return pid_namespace_fd_; }

 private:
  const SpawnRequest* request_ = nullptr;
  std::vector<std::string> cgroup_files_;  // see join_file() in the .cpp
  std::vector<const char*> cgroup_procs_;
  std::vector<int> namespace_types_;
  std::vector<int> namespace_fds_;
  int pid_namespace_fd_ = -1;
  struct Mount {
    std::string target;  // resolved inside the root
    std::string data;
    unsigned long flags = 0, remount_flags = 0, propagation = 0;
  };
  std::vector<Mount> mounts_;
  std::vector<const char*> mount_sources_, mount_targets_, mount_types_, mount_data_;
  std::vector<unsigned long> mount_flags_, mount_remount_flags_, mount_propagation_;
};

// Whether `request` has any container field that needs a forked (not vforked) child.
bool has_container_fields(const SpawnRequest& request);

}  // namespace shim::spawn
