// OutputBuffer: the bytes an output copy read from a process's pipe but could not write
// into the client's FIFO yet (nobody drains it: containerd restarting, a slow reader).
//
// A byte queue in two tiers, kept in order: memory (64 KiB chunks, allocated as needed
// and freed once delivered, up to `memory_bytes`), then a spill file (a ring of
// `spill_bytes` in an unnamed O_TMPFILE|O_CLOEXEC file in `spill_dir`, made at the first
// spill). Bytes go to memory while it has room and nothing is spilled; from the first
// spill on, new bytes go to the file until it is empty again, and the head of the file
// moves into memory whenever memory runs empty: memory always holds the oldest bytes, so
// memory -> spill -> memory keeps the order. Disk space for the ring is reserved
// (fallocate) before a read is taken into it, so a full disk makes the spill full, never
// loses a byte. All calls are short and run on the loop (small pread/pwrite on a local
// file).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/status.h"
#include "shim/stdio/process_io.h"  // OutputBufferOptions
#include "stdio/stdio_fd.h"

namespace shim::upgrade {
class CarriedFds;
}  // namespace shim::upgrade

namespace shim::stdio {

class OutputBuffer {
 public:
  explicit OutputBuffer(OutputBufferOptions options);
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  // Bytes held (memory + spill), and how many more fit under the bounds.
  std::uint64_t size() const { return memory_size_ + spill_size(); }
  bool empty() const { return size() == 0; }
  std::uint64_t room() const;
  // The bound: memory_bytes + spill_bytes (spill_bytes only while a spill file can be had).
  std::uint64_t capacity() const;
  std::uint64_t memory_size() const { return memory_size_; }
  std::uint64_t spill_size() const { return spill_tail_ - spill_head_; }
  // Whether a spill file was made (it lives until the buffer is destroyed).
  bool has_spill_file() const { return spill_.valid(); }
  int spill_fd() const { return spill_.get(); }

  // One read(2) of `fd` into the buffer, at most min(room(), 64 KiB) bytes; room() must
  // be > 0. The result and errno as read(2)'s; -1 with errno EIO etc. for a spill error
  // (nothing was read then).
  ssize_t read_from(int fd);
  // Appends bytes already read, regardless of the bounds (at most one read's worth).
  shim::Status append(const char* data, std::size_t size);

  // The oldest bytes, contiguous (refills memory from the spill when memory is empty);
  // empty only when the buffer is. Error: the spill file could not be read.
  shim::Status front(std::span<const char>* bytes);
  // Drops `n` bytes from the front (n <= front().size()).
  void consume(std::size_t n);

  // Live upgrade (stdio/stdio_upgrade.cpp). Save: the bytes in memory go into a memfd
  // made here (into *made, which owns it until the exec), the spill file's fd and ring
  // positions are noted; both fds go to *fds too. Restore, in the new program: the buffer
  // as it was, on duplicates of the fds (*carried closes the originals at the commit).
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds,
                                std::vector<Fd>* made) const;
  static shim::Status restore_after_upgrade(const boost::json::value& saved,
                                            const std::string& where,
                                            std::unique_ptr<OutputBuffer>* out,
                                            upgrade::CarriedFds* carried);

  // Counters for tests and logs.
  std::uint64_t spilled_bytes() const { return spilled_bytes_; }  // ever written to the file
  std::uint64_t peak_size() const { return peak_size_; }
  // Why the spill file could not be made or grown, once ("" if it could).
  const std::string& spill_error() const { return spill_error_; }

 private:
  struct Chunk {
    std::unique_ptr<char[]> data;
    std::size_t begin = 0;
    std::size_t end = 0;
  };

  bool spilling() const { return spill_size() > 0; }
  // Free space at the memory tail for the next read (a new chunk if needed).
  std::span<char> memory_tail(std::size_t max);
  // Room in the ring for `n` more bytes, reserving disk for them; false (and
  // spill_error_ set) if there is none.
  bool reserve_spill(std::size_t n);
  shim::Status write_spill(const char* data, std::size_t size);
  shim::Status refill_from_spill();
  void note_size();

  OutputBufferOptions options_;
  std::deque<Chunk> memory_;
  std::uint64_t memory_size_ = 0;
  Fd spill_;
  bool spill_usable_ = true;
  std::uint64_t spill_head_ = 0;  // absolute positions; the file offset is pos % spill_bytes
  std::uint64_t spill_tail_ = 0;
  std::uint64_t reserved_ = 0;  // bytes of the ring already fallocated
  std::vector<char> scratch_;   // one read on its way to the spill file
  std::uint64_t spilled_bytes_ = 0;
  std::uint64_t peak_size_ = 0;
  std::string spill_error_;
};

}  // namespace shim::stdio
