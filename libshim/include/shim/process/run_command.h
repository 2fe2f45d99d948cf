// Running a command to completion through the reaper: what a plug-in does for every
// `runc ...` call. Both functions block, so call them from a WorkPool thread, never from
// the event loop (the loop is what delivers the exit).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "shim/process/exit.h"
#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim {

// Spawns `request` with its exit claimed, then waits for that exit. A non-zero exit is
// not an error here: look at exit->status.
Status spawn_and_wait(Reaper& reaper, Spawner& spawner, const SpawnRequest& request,
                      ProcessExit* exit);

// Where run_and_capture sends the child's stdout or stderr.
enum class OutputRoute {
  kCapture,       // a pipe of its own, read into CaptureResult::out or CaptureResult::err
  kSameAsStdout,  // stderr only: wherever stdout goes (`2>&1`); with stdout captured,
                  // both land interleaved in CaptureResult::out
  kAsRequested,   // the fd SpawnRequest::fds maps to it; /dev/null when none
};

// How run_and_capture feeds the child and what it keeps of its output.
struct CaptureOptions {
  // Written to the child's stdin, which is then closed. Empty: stdin is the fd
  // SpawnRequest::fds maps to 0 (/dev/null when none).
  std::string input;
  OutputRoute out = OutputRoute::kCapture;
  OutputRoute err = OutputRoute::kCapture;
  // Per stream. Output beyond it is still read (so the child never blocks on a full
  // pipe) but dropped, and the stream is marked truncated.
  std::size_t max_output = 1024 * 1024;
  // Then the child gets SIGKILL (through its pidfd) and the call returns DeadlineExceeded.
  std::optional<std::chrono::milliseconds> timeout;
};

// What run_and_capture observed of the child.
struct CaptureResult {
  // Whether the child was spawned: false when the Status is a setup or spawn failure.
  bool started = false;
  ProcessExit exit;  // its exit (when started)
  std::string out;  // captured stdout (and stderr with kSameAsStdout), at most max_output
  std::string err;  // captured stderr
  bool out_truncated = false;  // stdout went beyond max_output
  bool err_truncated = false;  // stderr went beyond max_output
};

// Runs `request` with stdin, stdout and stderr routed as `options` says (a route other
// than kAsRequested replaces the fd the request maps) and waits for its exit. Reading
// stops once the child has exited and its pipes are drained, even if a grandchild (a
// detached container) still holds them open. A non-zero exit is not an error: look at
// result->exit.status; the Status reports spawn failures and timeouts (result->exit is
// then the killed child's exit).
Status run_and_capture(Reaper& reaper, Spawner& spawner, const SpawnRequest& request,
                       const CaptureOptions& options, CaptureResult* result);

}  // namespace shim
