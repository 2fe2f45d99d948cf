// Small fd helpers for the stdio layer: an owning fd, pipes, non-blocking mode.
#pragma once

#include <string>

#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim::stdio {

// Owns one file descriptor; closes it on destruction.
using Fd = shim::UniqueFd;

struct Pipe {
  Fd read_end;
  Fd write_end;
};

// pipe2(O_CLOEXEC). Both ends blocking: set O_NONBLOCK on the shim's end only, since the
// flag lives on the open file description and the runtime's end must stay blocking.
shim::Status make_pipe(Pipe* pipe);

shim::Status set_nonblocking(int fd);

// Whether `path` names a FIFO. A stat error (e.g. the path does not exist) is an error
// "stat <path>: <strerror>".
shim::Status is_fifo(const std::string& path, bool* fifo);

// "open <path>: <strerror>" for the current errno.
shim::Status errno_status(const std::string& what);

// Opens a client's stdin FIFO for a copy: an O_NONBLOCK `reader` (opens at once), then
// our `keeper` write end, which finds that reader and opens at once too. While the keeper
// lives the copy cannot see EOF, so the process keeps its stdin until CloseIO closes it
// and the client is done. Errors name the path as the Go shim does.
shim::Status open_stdin_fifo(const std::string& path, Fd* reader, Fd* keeper);

}  // namespace shim::stdio
