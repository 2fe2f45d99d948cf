// The fds a live upgrade carried, as the new program takes them (docs/live-upgrade.md):
// each as a duplicate, the original left open until the upgrade is committed. Why: until
// every participant restored its state, the new program may still go back to the old one
// (upgrade_restore.cpp), which needs every fd as it left them; the restored objects own
// the duplicates and close them as usual should the restore fail. Internal; one thread.
#pragma once

#include <vector>

#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim::upgrade {

class CarriedFds {
 public:
  CarriedFds() = default;
  CarriedFds(CarriedFds&&) = default;
  CarriedFds& operator=(CarriedFds&&) = default;
  // Leaves the originals open: only close_originals() closes them.
  ~CarriedFds() = default;

  // A close-on-exec duplicate of `fd` into *out (empty for -1); `what` names it in the
  // error when `fd` is not open.
  Status take(int fd, const char* what, UniqueFd* out);
  // Closes every original taken so far, once each. Call once the upgrade is committed.
  void close_originals();

 private:
  std::vector<int> originals_;
};

}  // namespace shim::upgrade
