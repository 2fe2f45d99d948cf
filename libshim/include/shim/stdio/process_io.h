// ProcessIO: the stdio of one container process (init or exec), as containerd's Go runc
// shim sets it up (pkg/process/io.go, cmd/containerd-shim-runc-v2/process/io.go). On the
// process tier libshim drives it for you: what an Instance receives as ProcessStdio is
// made here. A shim on the protocol tier (shim/task_service.h) uses it directly.
//
// Life cycle, in the Instance's terms:
//   1. create(): parses the request's stdio strings (the scheme from stdout), makes the
//      pipes the runtime gets (owned by StdioOwner: runc's IoUid/IoGid), creates the file
//      for file://, the console socket for a terminal.
//   2. The runtime gets runtime_stdin/stdout/stderr() (ProcessStdio::stdin/stdout/stderr,
//      -1: /dev/null) or console_socket_path() (ProcessStdio::console_socket) while it
//      creates the process (Instance::create, Instance::exec); then close_runtime_ends().
//   3. start() once the process exists: opens the stdin keeper and starts the copies
//      (stdin FIFO -> pipe, pipes -> stdout/stderr FIFO or file) on the event loop.
//   4. close_stdin() for CloseIO; wait_drained() before Delete; close() at the end.
//
// Copies run on the single event loop with non-blocking fds (splice(2) pipe to FIFO;
// read/write otherwise) and never drop bytes: a full FIFO is waited on; the copy ends at
// EOF of the process's pipe, i.e. once every holder of its write end is gone.
//
// Threading: create() anywhere; runtime_*() and close_runtime_ends() from any thread (the
// runtime's call runs on the work pool); everything else on the loop. The destructor
// closes everything (on the loop: inline when already there, else posted).
//
// Null IO (all three strings empty): no pipes, the runtime gets /dev/null, nothing to copy.
// binary:// and binary-v2:// loggers: the runtime's stdout/stderr are the logger's pipes
// (stdin unused, nothing to copy); logger_starter() runs on the pool before the runtime;
// close() stops the logger.
// Terminals: no pipes; the runtime sends the pty master to console_socket_path() (runc's
// --console-socket), console_receiver() takes it once the runtime returned, start() copies
// stdin FIFO -> master -> stdout (a FIFO, a file or the binary:// logger's stdout pipe).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/logger.h"
#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim {

class Reaper;
class Spawner;
struct ServiceContext;

// How the stdio bytes are copied between containerd's FIFOs and the process.
enum class CopyMethod {
  kSplice,     // splice(2) where both ends allow it, read/write otherwise
  kReadWrite,  // always read/write through a user-space buffer
};

// How long a binary:// logger has to signal readiness (its fd 5), as in the Go shim.
inline constexpr std::chrono::milliseconds kLoggerReadyTimeout{60000};
// How long Delete waits for a logger after SIGTERM before SIGKILL, as in the Go shim.
inline constexpr std::chrono::milliseconds kLoggerStopGrace{12000};

// How a binary:// or binary-v2:// logger is started and stopped.
struct BinaryLoggerSettings {
  Reaper* reaper = nullptr;    // claims the logger's exit
  Spawner* spawner = nullptr;  // fork+exec
  // CONTAINER_ID: the process's id as the Go shim passes it, i.e. the container id for
  // init and the exec id for an exec.
  std::string process_id;
  std::string ns;                                                 // CONTAINER_NAMESPACE
  std::chrono::milliseconds ready_timeout = kLoggerReadyTimeout;  // readiness wait
  std::chrono::milliseconds stop_grace = kLoggerStopGrace;        // SIGTERM -> SIGKILL at stop

  // Whether a logger can be started (a reaper and a spawner are set).
  bool usable() const { return reaper != nullptr && spawner != nullptr; }
};

// The settings a task service has at hand: its reaper, spawner and namespace.
BinaryLoggerSettings binary_logger_settings(ServiceContext& context, std::string process_id);

// What CreateTaskRequest / ExecProcessRequest carry.
struct StdioSpec {
  std::string stdin;      // stdin URI (a FIFO path), empty for none
  std::string stdout;     // stdout URI: FIFO path, file://, binary:// or binary-v2://
  std::string stderr;     // stderr URI, as stdout
  bool terminal = false;  // stdio goes through a pty (console socket)

  // No stream at all (every process stream is /dev/null).
  bool is_null() const { return stdin.empty() && stdout.empty() && stderr.empty(); }
};

// One of the three standard streams (the value is its fd number).
enum class StdioStream { kStdin = 0, kStdout = 1, kStderr = 2 };

// What an output copy does once its buffer is full (see OutputBufferOptions).
enum class OutputOverflow {
  kBlock,  // stop reading the process's pipe until there is room again: nothing is lost
  kDrop,   // go on reading and discard, counted and logged per episode
};

// The buffer between a process's stdout/stderr pipe and its output FIFO
// (docs/output-buffering.md). While nobody drains the FIFO (containerd restarting, a slow
// reader) the copy keeps reading the pipe, holds the bytes in memory up to
// `memory_bytes`, then in a spill file up to `spill_bytes` more, and delivers them in
// order, exactly once, when the FIFO drains again. Per stream. Files (file://, a plain
// path) never fill, so their copies are not buffered.
struct OutputBufferOptions {
  std::uint64_t memory_bytes = std::uint64_t{1} << 20;  // 1 MiB
  std::uint64_t spill_bytes = std::uint64_t{64} << 20;  // 64 MiB
  OutputOverflow overflow = OutputOverflow::kBlock;     // at the bound: block the writer or drop
  // Where the spill file is made (an unnamed O_TMPFILE, gone with its fd: nothing is left
  // behind, even by a killed shim). Empty: no spill file, memory only.
  std::string spill_dir;

  // Both bounds 0: no buffer (a full FIFO stops the copy at once).
  bool enabled() const { return memory_bytes + spill_bytes > 0; }
};

// How ProcessIO::create sets things up.
struct ProcessIOOptions {
  CopyMethod copy_method = CopyMethod::kSplice;  // splice(2) unless a test asks for read/write
  // The output FIFOs' buffer (stdout and stderr each; not for terminals).
  OutputBufferOptions output_buffer;
  // For binary:// and binary-v2:// stdout; without a reaper and spawner those schemes are
  // Unimplemented.
  BinaryLoggerSettings binary_logger;
};

// The stdio of one container process (see the file's description).
class ProcessIO {
 public:
  // Errors: "unknown STDIO scheme <s>" (Unknown), Unimplemented for binary:// without
  // options.binary_logger, pipe/chown/file/console socket errors with context.
  static shim::Status create(boost::asio::any_io_executor executor, const StdioSpec& spec,
                             int io_uid, int io_gid, const shim::Logger& logger,
                             std::unique_ptr<ProcessIO>* io, const ProcessIOOptions& options = {});
  ~ProcessIO();
  ProcessIO(const ProcessIO&) = delete;
  ProcessIO& operator=(const ProcessIO&) = delete;

  // The request's stdio as given.
  const StdioSpec& spec() const;
  // Whether the spec had no stream at all.
  bool is_null() const;

  // The runtime's ends of the pipes (stdin: read end; stdout/stderr: write ends), -1 for
  // a stream without a pipe or once closed. Owned by this object.
  int runtime_stdin() const;
  int runtime_stdout() const;
  int runtime_stderr() const;
  // Closes the runtime's ends: once the runtime returned, the process holds its own
  // copies, and the copies see EOF only once no writer is left. Idempotent.
  void close_runtime_ends();

  // Once the process exists (create or exec succeeded): opens the stdin keeper (our
  // write end on the stdin FIFO, so the process does not see EOF before CloseIO) and
  // starts the copies. Output FIFOs are written once their client has a reader. Errors
  // name the path; on error call close().
  shim::Status start();

  // CloseIO: closes exactly the stdin keeper; the process sees EOF once the client has
  // closed its end too. Idempotent.
  void close_stdin();

  // `callback(true)` once the stdout and stderr copies reached EOF (at once if there are
  // none), `callback(false)` when `timeout` passed first or close() came first. Always
  // runs later on the loop, never inside this call.
  void wait_drained(std::chrono::milliseconds timeout, std::function<void(bool drained)> callback);
  bool drained() const;
  // For Delete: wait_drained(), then also until the client has read everything from its
  // output FIFOs (ctr 1.6 drops what is unread when Delete returns).
  // `callback(true)` when both happened; false at `timeout`, after close(), or when the
  // client read nothing for a while (nobody reading).
  void wait_delivered(std::chrono::milliseconds timeout,
                      std::function<void(bool delivered)> callback);
  // For the process's exit, before containerd hears of it: the same wait, but it also
  // gives up once nothing moved for `stall` (no byte copied, none read by the client), so
  // a client that reads nothing (`ctr run -d`) or a child still holding an exec's stdout
  // holds the exit only that long. Why: ctr 1.6 closes its FIFOs as soon as it learns of
  // the exit (client task.go Delete: io.Close before the Delete call), dropping whatever
  // it has not read yet.
  void wait_settled(std::chrono::milliseconds timeout, std::chrono::milliseconds stall,
                    std::function<void(bool settled)> callback);

  // Bytes copied so far for a stream.
  std::uint64_t copied_bytes(StdioStream stream) const;
  // Bytes of a stream held in its output buffer now, and discarded by the `drop`
  // overflow policy so far.
  std::uint64_t buffered_bytes(StdioStream stream) const;
  std::uint64_t dropped_bytes(StdioStream stream) const;

  // Live upgrade (shim/live_upgrade.h, docs/live-upgrade.md), on the loop. upgrade_ready():
  // OK when this io can be carried across the exec; FailedPrecondition with the reason
  // for what cannot be yet (a binary:// logger, a terminal not started). save_for_upgrade():
  // the copies (their fds, the bytes in hand and buffered, counters), and the runtime's
  // ends of an io not started yet, into *state, every fd to keep open into *fds; what the
  // save makes (a memfd of the buffered bytes) lives here until the exec or
  // upgrade_aborted().
  shim::Status upgrade_ready() const;
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds);
  void upgrade_aborted();
  // In the new program, before it serves: the io that save_for_upgrade() described for
  // `spec`, its copies going on once the loop runs, on duplicates of the carried fds; the
  // originals are closed then too (until then the upgrade may still go back to the old
  // program, which needs them). Errors name the field of the state that is wrong.
  static shim::Status restore(boost::asio::any_io_executor executor, const StdioSpec& spec,
                              const boost::json::value& saved, const shim::Logger& logger,
                              std::unique_ptr<ProcessIO>* io, const ProcessIOOptions& options = {});

  // Stops every copy and closes every fd; pending wait_drained() callbacks get false.
  // Idempotent. Runs inline on the loop thread; from another thread it is posted there.
  void close();

  // binary:// loggers. logger_starter(): a job for a pool thread, to run before the
  // runtime creates the process: spawns the logger and blocks until it is ready; errors
  // read "failed to create init process I/O: ..." as in the Go shim. OK at once for the
  // other schemes. The job keeps the logger alive by itself; close() during it stops the
  // logger and makes it fail.
  std::function<shim::Status()> logger_starter() const;
  // Terminal with a binary:// stdout: the write end of the logger's stdout pipe, for the
  // pty copy, which closes it when done (the logger then sees EOF). Invalid Fd otherwise
  // or once taken.
  UniqueFd take_logger_stdout_writer();
  // The logger's pid; -1 without one or before logger_starter() spawned it.
  pid_t logger_pid() const;
  // Runs `next` once the binary:// logger is gone (stopping it if close() did not yet):
  // on the loop after its exit (SIGTERM, up to 12 s, SIGKILL), or right now without a
  // logger. The Go shim's Delete returns only then.
  void after_logger_exit(std::function<void()> next);

  // Terminals. Where the runtime sends the pty master (ProcessStdio::console_socket, runc's
  // --console-socket); "" without a terminal. Any thread.
  std::string console_socket_path() const;
  // A job for the pool thread whose runtime call (create, exec, restore) succeeded: takes
  // the pty master the runtime sent (bounded wait) and, for a FIFO stdout, waits a little
  // for the client's reader. It keeps what it needs alive, so close() meanwhile is safe
  // (the master is then closed). OK at once without a terminal; else errors read "failed
  // to retrieve console master: ...".
  std::function<shim::Status()> console_receiver() const;
  // ResizePty: the console's window size. OK without a console.
  shim::Status resize(std::uint32_t width, std::uint32_t height);
  // The process exited: a console copy ends once the master has nothing left to read,
  // even if a child still holds the terminal. No-op without a terminal.
  void process_exited();

 private:
  class Impl;
  explicit ProcessIO(std::shared_ptr<Impl> impl);

  std::shared_ptr<Impl> impl_;
};

}  // namespace shim
