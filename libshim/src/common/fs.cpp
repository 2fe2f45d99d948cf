#include "shim/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace shim {
namespace {

// The file helpers' codes: see ErrorStyle.
Code file_error_code(int err, ErrorStyle style) {
  if (err == ENOENT) return Code::kNotFound;
  if (style == ErrorStyle::kGo) return Code::kUnknown;
  if (err == EEXIST) return Code::kAlreadyExists;
  if (err == EACCES || err == EPERM) return Code::kPermissionDenied;
  return Code::kUnknown;
}

Status errno_status(std::string_view op, const std::string& path, int err,
                    ErrorStyle style = ErrorStyle::kC) {
  return errno_error(fmt::format("{} {}", op, path), err, style, file_error_code(err, style));
}

Status write_all(int fd, std::string_view content, const std::string& path,
                 ErrorStyle style = ErrorStyle::kC) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status("write", path, errno, style);
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace

std::string errno_text(int err, ErrorStyle style) {
  std::string text = std::strerror(err);
  if (style == ErrorStyle::kGo && !text.empty())
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

Status write_file_atomic(const std::string& path, std::string_view content, int mode) {
  std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return errno_status("open", tmp, errno);
  Status status = write_all(fd, content, tmp);
  if (::close(fd) != 0 && status.ok()) status = errno_status("close", tmp, errno);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = errno_status("rename", path, errno);
  }
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

Status write_existing_file(const std::string& path, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", path, errno);
  Status status = write_all(fd, content, path);
  ::close(fd);
  return status;
}

Status write_file(const std::string& path, std::string_view content, int mode,
                  ErrorStyle style) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return errno_status("open", path, errno, style);
  Status status = write_all(fd, content, path, style);
  if (::close(fd) != 0 && status.ok()) status = errno_status("close", path, errno, style);
  return status;
}

Status read_file(const std::string& path, std::string* content, ErrorStyle style) {
  content->clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", path, errno, style);
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return errno_status("read", path, err, style);
    }
    if (n == 0) break;
    content->append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return {};
}

Status make_dirs(const std::string& path, int mode) {
  if (path.empty()) return {};
  for (std::size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), static_cast<mode_t>(mode)) == 0 || errno == EEXIST) continue;
    return errno_status("mkdir", prefix, errno);
  }
  return {};
}

Status errno_error(std::string_view what, int err, ErrorStyle style, Code code) {
  return Status(code, fmt::format("{}: {}", what, errno_text(err, style)));
}

std::string runtime_temp_dir() {
  for (const char* variable : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return value;
  }
  return "/tmp";
}

}  // namespace shim
