// Small filesystem helpers the shim protocol needs, with errors that name the path.
#pragma once

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim {

// Writes `content` to `path` through a temp file + rename, so readers (containerd reading
// `address` after a restart) never see a partial file.
Status write_file_atomic(const std::string& path, std::string_view content, int mode = 0644);

// Writes `content` into an existing file in place (procfs, cgroupfs: no temp file).
Status write_existing_file(const std::string& path, std::string_view content);

// Reads a whole file; NotFound "open <path>: no such file or directory" style errors.
Status read_file(const std::string& path, std::string* content);

// Makes `path` and its parents (mode for the new ones); an existing dir is fine.
Status make_dirs(const std::string& path, int mode);

}  // namespace shim
