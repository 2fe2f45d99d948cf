#include "rootfs_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace shim_wasm {

shim::UniqueFd open_in_rootfs(const std::string& rootfs, const std::string& path) {
  shim::UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return shim::UniqueFd();
  struct open_how how {};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  // Relative to the root: leading slashes off (taken as a substring, which also keeps
  // GCC 12's -O3 -Wrestrict from a false positive on erase/assign).
  const std::size_t start = path.find_first_not_of('/');
  const std::string rel = start == std::string::npos ? std::string(".") : path.substr(start);
  long fd = ::syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof how);
  return shim::UniqueFd(static_cast<int>(fd));
}

}  // namespace shim_wasm
