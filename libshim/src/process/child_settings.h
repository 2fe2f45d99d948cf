// ChildSettings: what the parent prepares for the child's own settings (SpawnRequest's
// oom_score_adj, umask, rlimits, no_new_privileges, capabilities, user, search_path),
// kept alive until the child has exec'd: the child only reads what is filled in here.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "process/spawn_child.h"
#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim::spawn {

class ChildSettings {
 public:
  // Checks and converts `request`'s settings (InvalidArgument for a value out of range).
  Status prepare(const SpawnRequest& request);
  // Points `plan`'s settings fields at this object's storage.
  void fill(ChildPlan* plan) const;
  // Whether the child searches for the executable (a search_path and a path without '/').
  bool search() const { return search_; }
  // The search's candidates, by the index the child reports.
  const std::vector<std::string>& candidates() const { return candidates_; }

 private:
  const SpawnRequest* request_ = nullptr;
  std::string oom_score_adj_;
  std::vector<ChildRlimit> rlimits_;
  std::vector<gid_t> groups_;
  CapabilitySets capabilities_;
  int cap_last_cap_ = 0;
  bool search_ = false;
  std::vector<std::string> candidates_;
  std::vector<char*> candidate_pointers_;
  std::unique_ptr<bool[]> candidate_relative_;
};

// The highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap, read
// once; CAP_LAST_CAP of our headers if it cannot be read).
int kernel_last_capability();

}  // namespace shim::spawn
