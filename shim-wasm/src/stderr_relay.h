// The zygote's stderr, relayed into the shim's log.
//
// A shared shim's log moves: its stderr is the first task's log FIFO, and when
// containerd stops reading that one the shim points its stderr at a live task's
// (shim/protocol's follow_log). A helper process that inherited the first FIFO would
// write into the void from then on. So the zygote writes into a pipe, and the shim's
// event loop copies what comes out of it to whatever the shim's stderr is now.
//
// Threading: start() from any thread; the copying runs on `executor` (the one event
// loop) until the last writer closes the pipe.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim_wasm {

// Makes the pipe and starts copying from it to this process's STDERR_FILENO, as it is
// at each write. *write_end: the end to give the helper as its stderr (O_CLOEXEC).
[[nodiscard]] shim::Status start_stderr_relay(const boost::asio::any_io_executor& executor,
                                              shim::UniqueFd* write_end);

}  // namespace shim_wasm
