// The zygote's stderr, relayed into the shim's log.
//
// A shared shim's log moves: its stderr is the first task's log FIFO, and when
// containerd stops reading that one the shim points its stderr at a live task's
// (shim/protocol's follow_log). A helper process that inherited the first FIFO would
// write into the void from then on. So the zygote writes into a pipe, and the shim's
// event loop logs each line it reads there through the shim's logger, as one of its
// own: "<message>\t<key>=<value>\t..." gives that message and fields; any other line
// (the engine's own) is logged whole. A line longer than 4 KiB is cut there.
//
// Threading: start() from any thread; the reading runs on `executor` (the one event
// loop) until the last writer closes the pipe. `logger` must outlive the loop.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "shim/logger.h"
#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim_wasm {

// Makes the pipe and starts logging what comes out of it. *write_end: the end to give
// the helper as its stderr (O_CLOEXEC).
[[nodiscard]] shim::Status start_stderr_relay(const boost::asio::any_io_executor& executor,
                                              const shim::Logger& logger,
                                              shim::UniqueFd* write_end);

// One relayed line (no '\n') as the logger gets it: the message and its fields.
void log_relayed_line(const shim::Logger& logger, std::string_view line);

}  // namespace shim_wasm
