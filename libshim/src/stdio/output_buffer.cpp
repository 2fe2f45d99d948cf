#include "stdio/output_buffer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace shim::stdio {
namespace {

// One memory chunk, and at most this much per read.
constexpr std::size_t kChunk = 64 * 1024;
// Disk for the ring is reserved at least this much at a time.
constexpr std::uint64_t kReserveStep = std::uint64_t{1} << 20;

// An unnamed file in `dir` (O_TMPFILE), or a named one unlinked at once where the file
// system has no O_TMPFILE.
Fd make_spill_file(const std::string& dir, std::string* error) {
  Fd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600));
  if (fd.valid()) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    *error = fmt::format("spill file in {}: {}", dir, std::strerror(errno));
    return Fd();
  }
  std::string path = dir + "/.libshim-output-XXXXXX";
  fd = Fd(::mkostemp(path.data(), O_CLOEXEC));
  if (!fd.valid()) {
    *error = fmt::format("spill file {}: {}", path, std::strerror(errno));
    return Fd();
  }
  ::unlink(path.c_str());
  return fd;
}

// pread/pwrite of all `size` bytes at `offset`, through short transfers and EINTR.
template <class Byte, class Transfer>
bool transfer_all(Transfer transfer, int fd, Byte* data, std::size_t size, off_t offset) {
  while (size > 0) {
    ssize_t n = transfer(fd, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

bool pwrite_all(int fd, const char* data, std::size_t size, off_t offset) {
  return transfer_all(::pwrite, fd, data, size, offset);
}

bool pread_all(int fd, char* data, std::size_t size, off_t offset) {
  return transfer_all(::pread, fd, data, size, offset);
}

}  // namespace

OutputBuffer::OutputBuffer(OutputBufferOptions options) : options_(std::move(options)) {
  spill_usable_ = options_.spill_bytes > 0 && !options_.spill_dir.empty();
}

std::uint64_t OutputBuffer::capacity() const {
  return options_.memory_bytes + (spill_usable_ ? options_.spill_bytes : spill_size());
}

std::uint64_t OutputBuffer::room() const {
  if (spilling()) {
    // New bytes must follow the spilled ones: only the file can take them.
    return spill_usable_ ? options_.spill_bytes - spill_size() : 0;
  }
  std::uint64_t held = size();
  std::uint64_t cap = capacity();
  return held >= cap ? 0 : cap - held;
}

std::span<char> OutputBuffer::memory_tail(std::size_t max) {
  if (memory_.empty() || memory_.back().end == kChunk) {
    memory_.push_back(Chunk{std::make_unique<char[]>(kChunk), 0, 0});
  }
  Chunk& tail = memory_.back();
  return {tail.data.get() + tail.end, std::min(max, kChunk - tail.end)};
}

void OutputBuffer::note_size() { peak_size_ = std::max(peak_size_, size()); }

ssize_t OutputBuffer::read_from(int fd) {
  std::size_t max = static_cast<std::size_t>(std::min<std::uint64_t>(room(), kChunk));
  if (max == 0) {
    errno = ENOBUFS;
    return -1;
  }
  if (!spilling() && memory_size_ < options_.memory_bytes) {
    std::size_t fits = static_cast<std::size_t>(
        std::min<std::uint64_t>(max, options_.memory_bytes - memory_size_));
    std::span<char> tail = memory_tail(fits);
    ssize_t n = ::read(fd, tail.data(), tail.size());
    if (n > 0) {
      memory_.back().end += static_cast<std::size_t>(n);
      memory_size_ += static_cast<std::uint64_t>(n);
      note_size();
    } else if (memory_.back().begin == memory_.back().end) {
      int saved = errno;
      memory_.pop_back();  // nothing went into the new chunk
      errno = saved;
    }
    return n;
  }
  if (!reserve_spill(max)) {
    errno = ENOBUFS;  // the spill could not grow: full now
    return -1;
  }
  scratch_.resize(kChunk);
  ssize_t n = ::read(fd, scratch_.data(), max);
  if (n <= 0) return n;
  if (!write_spill(scratch_.data(), static_cast<std::size_t>(n)).ok()) {
    errno = EIO;
    return -1;
  }
  return n;
}

shim::Status OutputBuffer::append(const char* data, std::size_t size) {
  if (size == 0) return {};
  if (spilling()) {
    if (!reserve_spill(size)) return shim::unknown(fmt::format("output buffer: {}", spill_error_));
    return write_spill(data, size);
  }
  while (size > 0) {
    std::span<char> tail = memory_tail(size);
    std::memcpy(tail.data(), data, tail.size());
    memory_.back().end += tail.size();
    memory_size_ += tail.size();
    data += tail.size();
    size -= tail.size();
  }
  note_size();
  return {};
}

bool OutputBuffer::reserve_spill(std::size_t n) {
  if (!spill_usable_ || spill_size() + n > options_.spill_bytes) return false;
  if (!spill_.valid()) {
    spill_ = make_spill_file(options_.spill_dir, &spill_error_);
    if (!spill_.valid()) {
      spill_usable_ = false;
      return false;
    }
  }
  // Positions restart at 0 whenever the spill empties, so until the first wrap the file
  // is written at [0, tail): reserve up to tail + n; after it, all of the ring is.
  std::uint64_t need = std::min(options_.spill_bytes, spill_tail_ + n);
  if (need <= reserved_) return true;
  std::uint64_t grow_to = std::min(options_.spill_bytes, std::max(need, reserved_ + kReserveStep));
  int err = ::posix_fallocate(spill_.get(), static_cast<off_t>(reserved_),
                              static_cast<off_t>(grow_to - reserved_));
  if (err != 0) {
    spill_error_ = fmt::format("reserve spill file space: {}", std::strerror(err));
    spill_usable_ = false;
    return false;
  }
  reserved_ = grow_to;
  return true;
}

shim::Status OutputBuffer::write_spill(const char* data, std::size_t size) {
  const std::uint64_t ring = options_.spill_bytes;
  std::uint64_t offset = spill_tail_ % ring;
  std::size_t first = static_cast<std::size_t>(std::min<std::uint64_t>(size, ring - offset));
  if (!pwrite_all(spill_.get(), data, first, static_cast<off_t>(offset)) ||
      !pwrite_all(spill_.get(), data + first, size - first, 0)) {
    return shim::unknown(fmt::format("output buffer: write spill file: {}", std::strerror(errno)));
  }
  spill_tail_ += size;
  spilled_bytes_ += size;
  note_size();
  return {};
}

shim::Status OutputBuffer::refill_from_spill() {
  const std::uint64_t ring = options_.spill_bytes;
  std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(spill_size(), kChunk));
  Chunk chunk{std::make_unique<char[]>(kChunk), 0, n};
  std::uint64_t offset = spill_head_ % ring;
  std::size_t first = static_cast<std::size_t>(std::min<std::uint64_t>(n, ring - offset));
  if (!pread_all(spill_.get(), chunk.data.get(), first, static_cast<off_t>(offset)) ||
      !pread_all(spill_.get(), chunk.data.get() + first, n - first, 0)) {
    return shim::unknown(fmt::format("output buffer: read spill file: {}", std::strerror(errno)));
  }
  spill_head_ += n;
  memory_.push_back(std::move(chunk));
  memory_size_ += n;
  if (spill_size() == 0) {
    // Empty: start the ring over and give the disk back.
    spill_head_ = spill_tail_ = 0;
    if (::ftruncate(spill_.get(), 0) == 0) reserved_ = 0;
    scratch_.clear();
    scratch_.shrink_to_fit();
  }
  return {};
}

shim::Status OutputBuffer::front(std::span<const char>* bytes) {
  if (memory_.empty() && spilling()) {
    if (shim::Status status = refill_from_spill(); !status.ok()) return status;
  }
  if (memory_.empty()) {
    *bytes = {};
    return {};
  }
  const Chunk& head = memory_.front();
  *bytes = {head.data.get() + head.begin, head.end - head.begin};
  return {};
}

void OutputBuffer::consume(std::size_t n) {
  while (n > 0 && !memory_.empty()) {
    Chunk& head = memory_.front();
    std::size_t take = std::min(n, head.end - head.begin);
    head.begin += take;
    memory_size_ -= take;
    n -= take;
    if (head.begin == head.end) memory_.pop_front();
  }
}

}  // namespace shim::stdio
