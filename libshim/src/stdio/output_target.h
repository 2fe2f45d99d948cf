// Where a process's output goes, opened as containerd's Go runc shim opens it
// (pkg/process/io.go in 1.6, cmd/containerd-shim-runc-v2/process/io.go in 2.x): the one
// home for it, used by the pipe copies (process_io.cpp) and the pty copy (terminal_io.cpp).
//   file://<path>   created with its parent dirs, appended to (mode 0644);
//   a plain path    that is no FIFO: appended to, never created ("containerd-shim: opening
//                   file ... failed");
//   a FIFO          handed to FifoWriterOpener as an O_PATH fd (it waits for a reader).
#pragma once

#include <string>

#include "shim/status.h"
#include "stdio/stdio_fd.h"

namespace shim::stdio {

// A file:// output: created (and its parent dirs) if missing, opened O_APPEND.
shim::Status open_output_file(const std::string& path, Fd* file);

// What a plain output path turned out to be.
struct OutputPath {
  Fd file;       // a regular file (or anything but a FIFO), opened O_APPEND
  Fd fifo_path;  // a FIFO: an O_PATH fd of it, for FifoWriterOpener
};

// Opens the output path `path` (the stdout or stderr string without a scheme): one of
// `target`'s fds is set. Errors name the path as the Go shim does ("stat <path>: ...").
shim::Status open_output_path(const std::string& path, OutputPath* target);

}  // namespace shim::stdio
