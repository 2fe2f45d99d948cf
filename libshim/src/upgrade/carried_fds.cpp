#include "upgrade/carried_fds.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace shim::upgrade {

Status CarriedFds::take(int fd, const char* what, UniqueFd* out) {
  out->reset();
  if (fd < 0) return {};
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("upgrade state: {} fd {}: {}", what, fd, std::strerror(errno)));
  }
  out->reset(copy);
  if (std::find(originals_.begin(), originals_.end(), fd) == originals_.end())
    originals_.push_back(fd);
  return {};
}

void CarriedFds::close_originals() {
  for (int fd : originals_) ::close(fd);
  originals_.clear();
}

}  // namespace shim::upgrade
