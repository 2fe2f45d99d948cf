// A loop device over a file, for mounts with the "loop" option (containerd's setupLoop):
// a free /dev/loopN bound to the file with autoclear, so the kernel frees the device
// once it is unmounted and the last fd is closed. Keep the LoopDevice alive until the
// mount(2) over it is done, then let it close.
#pragma once

#include <string>

#include "shim/status.h"

namespace shim {

class LoopDevice {
 public:
  LoopDevice() = default;
  ~LoopDevice();
  LoopDevice(LoopDevice&& other) noexcept;
  LoopDevice& operator=(LoopDevice&& other) noexcept;
  LoopDevice(const LoopDevice&) = delete;
  LoopDevice& operator=(const LoopDevice&) = delete;

  // Binds a free loop device to `backing_file` (read-only if asked).
  static shim::Status attach(const std::string& backing_file, bool read_only, LoopDevice* device);

  const std::string& path() const { return path_; }  // "/dev/loop3"
  int fd() const { return fd_; }
  void close();

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace shim
