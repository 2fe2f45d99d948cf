// The zygote's stderr, relayed into the shim's log.
//
// A shared shim's log moves: its stderr is the first task's log FIFO, and when
// containerd stops reading that one the shim points its stderr at a live task's
// (shim/protocol's follow_log). A helper process that inherited the first FIFO would
// write into the void from then on. So the zygote writes into pipes, and the shim's
// event loop logs each line it reads there through the shim's logger, as one of its
// own. On the zygote's own log pipe, "<message>\t<key>=<value>\t..." gives that message
// and fields; on its stderr (the engine's lines, which may quote a module's names) each
// line is only a field, `said`, at warn level, so nothing there can pose as a line or a
// field of the shim's. A line longer than 4 KiB is cut there.
//
// Threading: start() from any thread; the reading runs on `executor` (the one event
// loop) until the last writer closes the pipe. `logger` must outlive the loop.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "shim/logger.h"
#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim_wasm {

// How a relayed line is logged.
enum class RelayedLines {
  kStructured,  // "<message>\t<key>=<value>...": that message and those fields
  kSaid,        // msg="wasm zygote" said=<the line>, at warn level
};

// Makes the pipe and starts logging what comes out of it. *write_end: the end to give
// the helper (O_CLOEXEC).
[[nodiscard]] shim::Status start_stderr_relay(const boost::asio::any_io_executor& executor,
                                              const shim::Logger& logger, RelayedLines form,
                                              shim::UniqueFd* write_end);

// One relayed line (no '\n') as the logger gets it. A structured line with a part that
// is no key=value is logged as said.
void log_relayed_line(const shim::Logger& logger, RelayedLines form, std::string_view line);

}  // namespace shim_wasm
