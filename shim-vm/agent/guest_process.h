// GuestProcess: one process the agent started in the guest (a container's init or an
// exec): its pid, its stdio as the host reads and writes it over the agent channel, its
// exit and who waits for it.
//
// Threading: the agent's loop only.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "shim/process/exit.h"
#include "shim/process/process_handle.h"
#include "shim/process/spawner.h"
#include "shim/status.h"
#include "shim/stdio/pty.h"
#include "shim/unique_fd.h"

namespace shim_vm_agent {

// One output stream (stdout, stderr, or a terminal's master) read on the host's demand.
class OutputStream {
 public:
  using ReadDone = std::function<void(shim::Status, std::string data, bool eof)>;

  OutputStream() = default;
  OutputStream(boost::asio::any_io_executor executor, shim::UniqueFd fd);

  bool valid() const { return pipe_ != nullptr; }
  bool eof() const { return eof_; }
  // Up to max_bytes once there are some; eof when the stream ended (a terminal's EIO).
  void read(std::size_t max_bytes, ReadDone done);
  // Ends a read in progress (the process was removed): it answers eof.
  void close();

 private:
  std::shared_ptr<boost::asio::posix::stream_descriptor> pipe_;
  bool eof_ = false;
  bool reading_ = false;
};

// The host-facing ends of a process's stdio, made before it is spawned.
struct ProcessPipes {
  shim::UniqueFd child_stdin, child_stdout, child_stderr;  // for the process (fds 0-2)
  shim::UniqueFd stdin_writer;                             // ours
  shim::UniqueFd stdout_reader, stderr_reader;             // ours
  shim::Pty pty;                                           // a terminal instead of pipes
};

// Makes the pipes (or the pty) asked for; a missing stream is /dev/null for the process.
shim::Status make_pipes(bool stdin, bool stdout, bool stderr, bool terminal, ProcessPipes* pipes);

class GuestProcess {
 public:
  GuestProcess(boost::asio::any_io_executor executor, std::string container_id,
               std::string exec_id);
  ~GuestProcess() { close(); }  // reads in flight end before the streams go
  GuestProcess(const GuestProcess&) = delete;
  GuestProcess& operator=(const GuestProcess&) = delete;

  const std::string& container_id() const { return container_id_; }
  const std::string& exec_id() const { return exec_id_; }

  // Takes the spawned child and the host-facing ends of its stdio.
  void started(shim::SpawnedProcess spawned, ProcessPipes pipes);
  pid_t pid() const { return pid_; }
  shim::ProcessGate& gate() { return gate_; }
  const shim::ProcessHandle& handle() const { return handle_; }

  OutputStream& output(int stream) { return stream == 2 ? stderr_ : stdout_; }
  // Writes `data` to stdin; `done` once all of it is in the pipe.
  void write_stdin(std::string data, std::function<void(shim::Status)> done);
  void close_stdin();
  shim::Status resize(unsigned width, unsigned height) const;

  // The reaper saw its exit: waiters are answered.
  void exited(const shim::ProcessExit& exit);
  const std::optional<shim::ProcessExit>& exit() const { return exit_; }
  void on_exit(std::function<void(const shim::ProcessExit&)> waiter);
  // Ends its stdio (removal).
  void close();

 private:
  boost::asio::any_io_executor executor_;
  std::string container_id_;
  std::string exec_id_;
  pid_t pid_ = -1;
  shim::ProcessHandle handle_;
  shim::ProcessGate gate_;
  shim::UniqueFd master_;  // a terminal's master (the slave is the process's only)
  std::shared_ptr<boost::asio::posix::stream_descriptor> stdin_;
  OutputStream stdout_;
  OutputStream stderr_;
  std::optional<shim::ProcessExit> exit_;
  std::vector<std::function<void(const shim::ProcessExit&)>> waiters_;
};

}  // namespace shim_vm_agent
