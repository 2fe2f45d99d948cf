#include "stdio/output_target.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim::stdio {
namespace {

std::string parent_dir(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

shim::Status open_output_file(const std::string& path, Fd* file) {
  if (shim::Status status = shim::make_dirs(parent_dir(path), 0755); !status.ok()) return status;
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return errno_status(fmt::format("open {}", path));
  *file = std::move(fd);
  return {};
}

shim::Status open_output_path(const std::string& path, OutputPath* target) {
  Fd path_fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  struct stat st {};
  if (!path_fd.valid() || ::fstat(path_fd.get(), &st) < 0) {
    return errno_status(fmt::format("stat {}", path));
  }
  if (S_ISFIFO(st.st_mode)) {
    target->fifo_path = std::move(path_fd);
    return {};
  }
  // Go opens it O_WRONLY|O_APPEND and does not create it.
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!fd.valid()) {
    return errno_status(fmt::format("containerd-shim: opening file \"{}\" failed", path));
  }
  target->file = std::move(fd);
  return {};
}

}  // namespace shim::stdio
