#include "rootfs_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace shim_wasm {

shim::UniqueFd open_in_rootfs(const std::string& rootfs, const std::string& path) {
  // A C string ends at a NUL: "/etc/shadow\0/x" would name a file it does not say.
  if (rootfs.find('\0') != std::string::npos || path.find('\0') != std::string::npos) {
    errno = EINVAL;
    return shim::UniqueFd();
  }
  shim::UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return shim::UniqueFd();
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  // Relative to the root: leading slashes off (taken as a substring, which also keeps
  // GCC 12's -O3 -Wrestrict from a false positive on erase/assign).
  const std::size_t start = path.find_first_not_of('/');
  const std::string rel = start == std::string::npos ? std::string(".") : path.substr(start);
  shim::UniqueFd found(
      static_cast<int>(::syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof how)));
  if (found.get() < 0) return shim::UniqueFd();
  struct stat st;
  if (::fstat(found.get(), &st) != 0) return shim::UniqueFd();
  if (!S_ISREG(st.st_mode)) {
    errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    return shim::UniqueFd();
  }
  // The O_PATH fd names the inode found: reopening it cannot land elsewhere. O_NONBLOCK:
  // a lease the container's process holds on the file fails the open rather than
  // holding it until the lease breaks (reads of a regular file are not affected).
  const std::string self = "/proc/self/fd/" + std::to_string(found.get());
  return shim::UniqueFd(::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
}

}  // namespace shim_wasm
