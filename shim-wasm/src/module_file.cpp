#include "module_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shim/unique_fd.h"

namespace shim_wasm {

bool read_module_file(int fd, std::size_t limit, std::string* out) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      static_cast<std::size_t>(st.st_size) > limit) {
    return false;
  }
  out->resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out->size()) {
    ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // shrank meanwhile, or an error: the child loads it itself
      out->clear();
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool file_holds(const std::string& path, std::string_view bytes) {
  // O_NONBLOCK: a FIFO at the path opens at once (and is refused below) instead of
  // blocking; this runs in the container's own process, under its device rules.
  shim::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) != bytes.size()) {
    return false;
  }
  char piece[4096];
  std::size_t at = 0;
  for (;;) {
    ssize_t n = ::pread(fd.get(), piece, sizeof piece, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return at == bytes.size();
    if (at + static_cast<std::size_t>(n) > bytes.size() ||
        std::memcmp(piece, bytes.data() + at, static_cast<std::size_t>(n)) != 0) {
      return false;
    }
    at += static_cast<std::size_t>(n);
  }
}

}  // namespace shim_wasm
