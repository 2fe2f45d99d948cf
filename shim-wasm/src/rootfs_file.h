// A regular file of a container's root, opened from the host without leaving that root
// and without opening anything else there.
//
// Threading: a plain function.
#pragma once

#include <string>

#include "shim/unique_fd.h"

namespace shim_wasm {

// Opens the regular file `path` (absolute, as the container sees it) read-only inside
// the host dir `rootfs`, symlinks resolved as inside the container (openat2
// RESOLVE_IN_ROOT), so an image's symlink never reaches a host file. Anything but a
// regular file is refused before it is opened for reading: a FIFO the container made
// would block the opener, a device node's open acts on the device. -1 with errno set
// when it cannot (EISDIR, or EINVAL for another non-regular file or a path holding a
// NUL byte).
shim::UniqueFd open_in_rootfs(const std::string& rootfs, const std::string& path);

}  // namespace shim_wasm
