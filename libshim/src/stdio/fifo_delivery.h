// Waiting until a client has read what the shim copied into its output FIFOs.
//
// Why: ctr 1.6 closes its FIFO read ends as soon as Delete / DeleteProcess returns (cio's
// Cancel), and whatever is still buffered in a FIFO then is thrown away with it. The shim
// answers Delete only after its copies drained, but bytes that reached the FIFO just
// before the answer may not have been read yet by ctr's reader goroutine: seen about once
// in 300 `ctr task exec` runs, which then printed nothing at all. So Delete also waits
// until the FIFOs are empty. FIONREAD on a reader of a FIFO tells how much is unread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "stdio/stdio_fd.h"

namespace shim::stdio {

struct FifoReadWait {
  // Give up (done(false)) at this time ...
  std::chrono::steady_clock::time_point deadline;
  // ... or when nothing was read for this long: nobody is reading (`ctr run -d`, a
  // client that went away), and waiting longer would only slow Delete down.
  std::chrono::milliseconds stall{50};
  std::chrono::milliseconds poll{1};
};

// Bytes buffered in the pipe or FIFO behind `fd` (FIONREAD); 0 if that cannot be told.
std::size_t unread_bytes(int fd);

// Calls `done(true)` on `executor` once every FIFO behind `readers` (read-only fds of
// them, owned and closed at the end) is empty, `done(false)` at a stall or the deadline.
// Always later, never inside this call.
void wait_until_read(boost::asio::any_io_executor executor, std::vector<Fd> readers,
                     FifoReadWait wait, std::function<void(bool read)> done);

}  // namespace shim::stdio
