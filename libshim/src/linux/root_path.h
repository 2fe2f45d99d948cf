// Joining a path under a root directory so that neither ".." nor symlinks lead out of it
// (continuity's fs.RootPath, used by containerd 1.7+ for Mount.target).
#pragma once

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim {

// `root` + `path`, resolving symlinks found under root as if root were "/" (absolute
// link targets restart at root, ".." stops at root). Components that do not exist are
// taken literally. An empty path gives root. Errors: more than 255 links ("too many
// links"), or an lstat/readlink failure other than ENOENT.
shim::Status root_path(const std::string& root, std::string_view path, std::string* joined);

}  // namespace shim
