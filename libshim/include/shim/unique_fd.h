// UniqueFd: sole owner of one file descriptor, closed when the owner goes.
#pragma once

#include <utility>

namespace shim {

class UniqueFd {
 public:
  // Empty (-1).
  UniqueFd() = default;
  // Takes ownership of `fd`.
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }  // closes the fd
  // Takes over `other`'s fd.
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  // Closes its own fd, then takes over `other`'s.
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  // The fd, still owned (-1 when empty).
  int get() const { return fd_; }
  // Whether it holds an fd.
  bool valid() const { return fd_ >= 0; }
  // Gives the fd up without closing it.
  int release() { return std::exchange(fd_, -1); }
  // Closes the fd held (if any) and takes `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace shim
