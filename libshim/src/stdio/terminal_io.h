// TerminalIO: the stdio of a process with a terminal (containerd runtime/v2/runc/platform.go), the
// terminal half of ProcessIO.
//
// There are no pipes: the runtime gets `--console-socket <console_socket_path()>`, makes
// the pty and sends its master there before `create`/`exec` returns. Then, on the pool
// thread that ran the runtime, receive_console() takes the master from the socket's
// backlog; back on the loop start() removes the socket and copies stdin FIFO -> master
// and master -> stdout (a FIFO once its client reads, a file, or a binary:// logger's
// pipe). stderr is unused. The stdin keeper (for CloseIO) works as without a terminal;
// the end of stdin hangs the terminal up, as in the Go shim.
//
// Threading: create(), console_socket_path() and receive_console() from any thread;
// the rest on the loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/logger.h"
#include "shim/status.h"
#include "shim/stdio/console_socket.h"
#include "shim/stdio/process_io.h"
#include "stdio/console_copier.h"
#include "stdio/fifo_writer_opener.h"
#include "stdio/stdio_fd.h"

namespace shim {

// How long to wait for the master once the runtime returned: it sent it before
// returning, so this only bounds a runtime that never does.
inline constexpr std::chrono::milliseconds kConsoleReceiveTimeout{10000};
// How long the pool thread waits for the client's reader on a stdout FIFO (see
// wait_output_reader()); afterwards the FIFO is opened asynchronously instead.
inline constexpr std::chrono::milliseconds kOutputReaderWait{3000};

class TerminalIO : public std::enable_shared_from_this<TerminalIO> {
 public:
  using OutputDone = std::function<void(const stdio::CopyResult&)>;

  // Makes the console socket (shim::ConsoleSocket's default dir). Error:
  // "failed to create OCI runtime console socket: ..." as in the Go shim.
  static shim::Status create(boost::asio::any_io_executor executor, StdioSpec spec,
                             const shim::Logger& logger, std::shared_ptr<TerminalIO>* terminal);
  ~TerminalIO();

  // For --console-socket. Fixed at create(): safe from any thread.
  const std::string& console_socket_path() const { return socket_path_; }

  // Blocks until the runtime's connection (queued before it returned) hands over the
  // master, or `timeout`. "failed to retrieve console master: ...". Any thread; after
  // close() the master, if it still comes, is closed at once.
  shim::Status receive_console(std::chrono::milliseconds timeout = kConsoleReceiveTimeout);

  // Any thread, after receive_console(): for a FIFO stdout, waits (at most `timeout`)
  // until the client has a reader and opens it for writing, as the Go shim does before
  // it answers Create/Start. Clients (ctr) stop reading soon after the process's exit and
  // Delete; with the FIFO open before the reply, a process that prints and exits at once
  // has its output read in time. Best effort: without a reader by then, or on any error,
  // start() opens the FIFO asynchronously and reports errors.
  void wait_output_reader(std::chrono::milliseconds timeout = kOutputReaderWait);

  // Loop, after receive_console() succeeded: removes the socket, opens the stdin FIFO (its
  // keeper goes to `*stdin_keeper`) and starts the copies. `logger_stdout`, when valid, is
  // the binary:// logger's stdout pipe and the output goes there instead of the stdout
  // path. `output_done` runs once, on the loop, when the output copy has ended (also if
  // its target could not be opened), never after close(). Errors name the path.
  shim::Status start(stdio::Fd logger_stdout, stdio::Fd* stdin_keeper, OutputDone output_done);

  // The process exited: the output copy ends once the master is drained.
  void process_exited();
  // TIOCSWINSZ (the values are truncated to 16 bits, as in Go). OK without a console.
  shim::Status resize(std::uint32_t width, std::uint32_t height);
  bool has_console() const { return copier_ && copier_->master_open(); }

  std::uint64_t copied_bytes(StdioStream stream) const;

  // Stops the copies and closes the master, the socket and its dir. Idempotent.
  void close();

  // Live upgrade (stdio/terminal_upgrade.cpp), on the loop. upgrade_ready():
  // FailedPrecondition before start() (its console socket still waits for the runtime).
  // save_for_upgrade(): the console copy and the output FIFO still being opened. restore(): in the
  // new program, the terminal that save_for_upgrade() described (no console socket: the runtime is
  // done with it).
  shim::Status upgrade_ready();
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds);
  static shim::Status restore(boost::asio::any_io_executor executor, StdioSpec spec,
                              const shim::Logger& logger, const boost::json::value& saved,
                              upgrade::CarriedFds* carried, OutputDone output_done,
                              std::shared_ptr<TerminalIO>* terminal);

  // Public for make_shared; use create() (`socket` is null only for restore()).
  TerminalIO(boost::asio::any_io_executor executor, StdioSpec spec, const shim::Logger& logger,
             std::shared_ptr<shim::ConsoleSocket> socket);

 private:
  shim::Status start_input(stdio::Fd* stdin_keeper);
  shim::Status start_output(stdio::Fd logger_stdout);
  void start_fifo_opener(stdio::Fd fifo_path);
  stdio::ConsoleCopier::DoneHandler input_done_handler();
  stdio::ConsoleCopier::DoneHandler output_done_handler();
  void on_output_opened(shim::Status status, stdio::OpenedFifo fifo);
  void on_output_done(const stdio::CopyResult& result);

  boost::asio::any_io_executor executor_;
  StdioSpec spec_;
  shim::Logger logger_;
  const std::string socket_path_;

  std::mutex mu_;  // the pool thread's receive_console() against the loop
  std::shared_ptr<shim::ConsoleSocket> socket_;  // guarded by mu_
  stdio::Fd master_;                             // guarded by mu_; until start()
  stdio::OpenedFifo opened_output_;              // guarded by mu_; until start()
  bool closed_ = false;                          // guarded by mu_

  std::shared_ptr<stdio::ConsoleCopier> copier_;
  std::shared_ptr<stdio::FifoWriterOpener> opener_;
  OutputDone output_done_;
  bool exited_ = false;
};

}  // namespace shim
