#include "upgrade/upgrade_state.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace shim::upgrade {
namespace {

constexpr std::string_view kHeader = "libshim-upgrade-state ";

Status errno_status(std::string_view what) {
  return Status(Code::kInternal, fmt::format("{}: {}", what, std::strerror(errno)));
}

Status write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status("write upgrade state");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

Status read_all(int fd, std::string* out) {
  if (::lseek(fd, 0, SEEK_SET) < 0) return errno_status("rewind upgrade state");
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status("read upgrade state");
    if (n == 0) return {};
    out->append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

Status write_state(const boost::json::object& document, int format, int* memfd) {
  int fd = ::memfd_create("libshim-upgrade-state", MFD_CLOEXEC);
  if (fd < 0) return errno_status("memfd_create for the upgrade state");
  std::string bytes = fmt::format("{}{}\n{}", kHeader, format, boost::json::serialize(document));
  Status written = write_all(fd, bytes);
  if (written.ok() && ::lseek(fd, 0, SEEK_SET) < 0) written = errno_status("rewind upgrade state");
  if (!written.ok()) {
    ::close(fd);
    return written;
  }
  *memfd = fd;
  return {};
}

std::string readable_state_formats() {
  std::string formats;
  for (int format = kOldestStateFormat; format <= kStateFormat; ++format) {
    if (!formats.empty()) formats += ',';
    formats += std::to_string(format);
  }
  return formats;
}

Status read_state(int fd, int* format, boost::json::object* document) {
  std::string bytes;
  if (Status s = read_all(fd, &bytes); !s.ok()) return s;
  std::size_t newline = bytes.find('\n');
  if (!bytes.starts_with(kHeader) || newline == std::string::npos) {
    return Status(Code::kInvalidArgument,
                  fmt::format("upgrade state (fd {}) has no \"{}<format>\" header", fd, kHeader));
  }
  std::string number = bytes.substr(kHeader.size(), newline - kHeader.size());
  char* end = nullptr;
  long parsed = std::strtol(number.c_str(), &end, 10);
  if (number.empty() || *end != '\0' || parsed <= 0 || parsed > 1000000) {
    return Status(Code::kInvalidArgument, fmt::format("upgrade state format \"{}\"", number));
  }
  *format = static_cast<int>(parsed);
  if (*format < kOldestStateFormat || *format > kStateFormat) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("upgrade state format {} (this program reads formats {})", *format,
                              readable_state_formats()));
  }
  boost::system::error_code error;
  boost::json::value value = boost::json::parse(std::string_view(bytes).substr(newline + 1), error);
  if (error || !value.is_object()) {
    return Status(Code::kInvalidArgument,
                  fmt::format("upgrade state is not a JSON object: {}",
                              error ? error.message() : "another JSON value"));
  }
  *document = std::move(value.as_object());
  return {};
}

bool set_cloexec(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  return flags >= 0 && ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0;
}

Status KeptFds::clear_cloexec() {
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    int flags = ::fcntl(fds_[i], F_GETFD);
    if (flags < 0 || ::fcntl(fds_[i], F_SETFD, flags & ~FD_CLOEXEC) != 0) {
      Status failed = errno_status(fmt::format("keep fd {} open across the exec", fds_[i]));
      for (std::size_t j = 0; j < i; ++j) upgrade::set_cloexec(fds_[j]);
      return failed;
    }
  }
  return {};
}

void KeptFds::set_cloexec() const {
  for (int fd : fds_) upgrade::set_cloexec(fd);
}

}  // namespace shim::upgrade
