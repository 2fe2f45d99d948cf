#include "linux/loop_device.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "gocompat/go_compat.h"
#include "shim/unique_fd.h"

namespace shim {

namespace {

// Another process may take the device between LOOP_CTL_GET_FREE and the bind.
constexpr int kAttachAttempts = 100;

loop_info64 loop_info_for(const std::string& backing_file, bool read_only) {
  loop_info64 info{};
  info.lo_flags = LO_FLAGS_AUTOCLEAR | (read_only ? LO_FLAGS_READ_ONLY : 0);
  std::strncpy(reinterpret_cast<char*>(info.lo_file_name), backing_file.c_str(),
               LO_NAME_SIZE - 1);
  return info;
}

// Binds `loop` to `file`: LOOP_CONFIGURE (5.8+) in one step, else SET_FD + SET_STATUS64.
int bind_loop(int loop, int file, const loop_info64& info) {
#ifdef LOOP_CONFIGURE
  loop_config config{};
  config.fd = static_cast<unsigned>(file);
  config.info = info;
  if (::ioctl(loop, LOOP_CONFIGURE, &config) == 0) return 0;
  if (errno != EINVAL && errno != ENOTTY) return -1;
#endif
  if (::ioctl(loop, LOOP_SET_FD, file) != 0) return -1;
  if (::ioctl(loop, LOOP_SET_STATUS64, &info) == 0) return 0;
  int err = errno;
  ::ioctl(loop, LOOP_CLR_FD, 0);
  errno = err;
  return -1;
}

}  // namespace

LoopDevice::~LoopDevice() { close(); }

LoopDevice::LoopDevice(LoopDevice&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

LoopDevice& LoopDevice::operator=(LoopDevice&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

void LoopDevice::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

shim::Status LoopDevice::attach(const std::string& backing_file, bool read_only,
                                LoopDevice* device) {
  int mode = read_only ? O_RDONLY : O_RDWR;
  shim::UniqueFd file(::open(backing_file.c_str(), mode | O_CLOEXEC));
  if (file.get() < 0)
    return shim::unknown(fmt::format("open {}: {}", backing_file, go_errno_text(errno)));
  shim::UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (control.get() < 0)
    return shim::unknown(fmt::format("open /dev/loop-control: {}", go_errno_text(errno)));
  loop_info64 info = loop_info_for(backing_file, read_only);

  int last_error = EBUSY;
  for (int attempt = 0; attempt < kAttachAttempts; ++attempt) {
    int number = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (number < 0)
      return shim::unknown(fmt::format("get a free loop device: {}", go_errno_text(errno)));
    std::string path = fmt::format("/dev/loop{}", number);
    shim::UniqueFd loop(::open(path.c_str(), mode | O_CLOEXEC));
    if (loop.get() < 0) {
      last_error = errno;
      if (last_error == ENOENT) continue;  // udev has not made the node yet
      return shim::unknown(fmt::format("open {}: {}", path, go_errno_text(last_error)));
    }
    if (bind_loop(loop.get(), file.get(), info) == 0) {
      *device = LoopDevice();
      device->fd_ = loop.release();
      device->path_ = std::move(path);
      return {};
    }
    last_error = errno;
    if (last_error != EBUSY) {
      return shim::unknown(fmt::format("set up {} for {}: {}", path, backing_file,
                                       go_errno_text(last_error)));
    }
  }
  return shim::unknown(fmt::format("set up a loop device for {}: {}", backing_file,
                                   go_errno_text(last_error)));
}

}  // namespace shim
