// Small filesystem helpers the shim protocol needs, with errors that name the path.
#pragma once

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim {

// How file errors are worded. kC: strerror(3)'s text ("open <path>: No such file or
// directory"), coded NotFound, AlreadyExists, PermissionDenied or Unknown. kGo: as Go's
// *os.PathError prints it ("open <path>: no such file or directory"), NotFound for ENOENT
// and Unknown otherwise, for shims whose errors must match a Go shim's byte for byte.
enum class ErrorStyle { kC, kGo };

// errno's text in `style` ("No such file or directory" / "no such file or directory").
std::string errno_text(int err, ErrorStyle style);

// "<what>: <errno text>" with `code`; Unknown by default, which is what containerd makes
// of a Go shim's plain error. The one errno-to-Status helper of libshim.
Status errno_error(std::string_view what, int err, ErrorStyle style = ErrorStyle::kC,
                   Code code = Code::kUnknown);

// Where short-lived runtime files go (a console socket's dir, runc's process.json):
// $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp, as Go's os.TempDir() after XDG.
std::string runtime_temp_dir();

// Writes `content` to `path` through a temp file + rename, so readers (containerd reading
// `address` after a restart) never see a partial file.
Status write_file_atomic(const std::string& path, std::string_view content, int mode = 0644);

// Writes `content` into an existing file in place (procfs, cgroupfs: no temp file).
Status write_existing_file(const std::string& path, std::string_view content);

// Writes `content` into `path` in place, creating it with `mode` or truncating it (Go's
// os.WriteFile); a failed close is an error too.
Status write_file(const std::string& path, std::string_view content, int mode,
                  ErrorStyle style = ErrorStyle::kC);

// Reads a whole file into `content` (emptied first); NotFound "open <path>: ..." when the
// file does not exist.
Status read_file(const std::string& path, std::string* content,
                 ErrorStyle style = ErrorStyle::kC);

// Makes `path` and its parents (mode for the new ones); an existing dir is fine.
Status make_dirs(const std::string& path, int mode);

}  // namespace shim
