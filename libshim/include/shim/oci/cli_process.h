// Running one runtime command (runc, crun, ...) to completion the way go-runc runs it:
// the binary looked up on PATH like Go's exec.Command, the shim's environment without
// NOTIFY_SOCKET, parent-death signal SIGKILL, the child's exit claimed from the reaper
// (so no subscriber ever sees runc's own exit), output captured through pipes.
// Blocking: call it on a WorkPool thread, never on the event loop that delivers exits.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "shim/process/exit.h"
#include "shim/process/reaper.h"
#include "shim/process/spawner.h"

namespace shim::oci {

// The runtime's stdio (a container's pipes for create/exec/restore). -1: /dev/null.
struct Stdio {
  int in = -1;   // the runtime's stdin
  int out = -1;  // its stdout
  int err = -1;  // its stderr
};

// What becomes of the runtime's stdout and stderr.
enum class OutputCapture {
  kNone,      // fds 0-2 from `stdio` (go-runc with an IO set)
  kCombined,  // stdout and stderr into one pipe (go-runc's cmdOutput(combined=true))
  kStdout,    // stdout only, stderr /dev/null (cmdOutput(combined=false))
  kSeparate,  // stdout and stderr apart (the Go shim's `features` call)
};

// One runtime command and how to run it.
struct CommandRequest {
  // argv[0] is the binary as named: without a '/', searched on the shim's PATH.
  std::vector<std::string> argv;
  OutputCapture capture = OutputCapture::kCombined;
  Stdio stdio;        // kNone only
  std::string input;  // non-empty: fed to stdin, which it replaces (`update`)
  std::size_t max_output = 1024 * 1024;  // per stream; the rest is read and dropped
  // Then SIGKILL; the result is that of a killed runc (exit status 137).
  std::optional<std::chrono::milliseconds> timeout;
};

// How one runtime command went.
struct CommandResult {
  bool started = false;    // false: it never ran (`error` says why)
  shim::ProcessExit exit;  // valid when started
  std::string output;      // stdout, or stdout+stderr interleaved (kCombined)
  std::string error_output;  // stderr (kSeparate)
  bool truncated = false;  // more than max_output was written to a captured stream
  // "" on success, else go-runc's error text: the start error
  //   (`exec: "runc": executable file not found in $PATH`, `fork/exec /x: permission denied`)
  // or "<argv[0]> did not terminate successfully: exit status N".
  std::string error;

  // Whether it ran and exited 0.
  bool ok() const { return error.empty(); }
};

// Runs `request` to its exit (see the file's description). Blocking.
CommandResult run_cli_command(shim::Reaper& reaper, shim::Spawner& spawner, const CommandRequest& request);

// The shim's environment minus NOTIFY_SOCKET (which makes runc talk to systemd).
std::vector<std::string> cli_environment();

}  // namespace shim::oci
