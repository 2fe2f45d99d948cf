// A file of a container's root, opened from the host without leaving that root.
//
// Threading: a plain function.
#pragma once

#include <string>

#include "shim/unique_fd.h"

namespace shim_wasm {

// Opens `path` (absolute, as the container sees it) read-only inside the host dir
// `rootfs`, symlinks resolved as inside the container (openat2 RESOLVE_IN_ROOT), so an
// image's symlink never reaches a host file. -1 with errno set when it cannot.
shim::UniqueFd open_in_rootfs(const std::string& rootfs, const std::string& path);

}  // namespace shim_wasm
