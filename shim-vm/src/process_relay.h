// ProcessRelay: one guest process as the host sees it. Its output comes from the agent
// (ReadOutput, one call per stream at a time) into the stdio fds libshim gave the
// Instance; its stdin goes the other way (WriteStdin, CloseStdin at EOF); a terminal is a
// host pty whose master goes to libshim's console socket. Its exit (WaitProcess) is
// reported to libshim (shim/instance_events.h) once its output is through, so the
// TaskExit follows the last byte; a lost agent (the VM ended) is an exit with status 255.
//
// Threading: take_stdio() on the pool (it blocks on the console socket); everything
// else runs on the loop, where the agent's callbacks come.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent_client.h"
#include "shim/instance_events.h"
#include "shim/logger.h"
#include "shim/runtime.h"
#include "shim/stdio/pty.h"
#include "shim/unique_fd.h"

namespace shim_vm {

class ProcessRelay : public std::enable_shared_from_this<ProcessRelay> {
 public:
  ProcessRelay(boost::asio::any_io_executor executor, std::shared_ptr<AgentClient> agent,
               shim::Logger& logger, std::string id, std::string exec_id,
               std::shared_ptr<shim::InstanceEvents> events);

  // Keeps copies of `stdio`'s fds (libshim closes its own when the call returns); for a
  // terminal, opens the host pty and sends its master to the console socket.
  shim::Status take_stdio(const shim::ProcessStdio& stdio);
  // What the agent is to keep of the process's stdio.
  agent::Stdio agent_stdio() const;

  // Starts the copies and the exit watch (the process exists in the guest now).
  void start();
  // The process's pid, for its exit report.
  void set_pid(std::uint32_t pid) { pid_ = pid; }
  // Ends the copies (the process was removed); no exit is reported afterwards.
  void stop();

 private:
  using Descriptor = boost::asio::posix::stream_descriptor;

  void read_output(int stream);
  void output_done(int stream);
  void read_stdin();
  void watch_exit();
  void exited(int status, std::chrono::system_clock::time_point at);
  void report_exit_when_drained();

  boost::asio::any_io_executor executor_;
  std::shared_ptr<AgentClient> agent_;
  shim::Logger& logger_;
  std::string id_;
  std::string exec_id_;
  std::shared_ptr<shim::InstanceEvents> events_;
  std::uint32_t pid_ = 0;

  shim::Pty pty_;                                   // a terminal: the host end is its slave
  std::array<std::shared_ptr<Descriptor>, 3> out_;  // [1] stdout, [2] stderr
  std::shared_ptr<Descriptor> in_;                  // the stdin libshim feeds
  bool want_stdin_ = false;
  std::array<bool, 3> output_open_{false, false, false};
  std::optional<std::pair<int, std::chrono::system_clock::time_point>> exit_;
  std::optional<boost::asio::steady_timer> drain_timer_;
  bool reported_ = false;
  bool stopped_ = false;
};

}  // namespace shim_vm
