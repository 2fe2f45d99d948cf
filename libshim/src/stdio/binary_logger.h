// BinaryLogger: the logging program behind a `binary://` or `binary-v2://` stdout URI
// (pkg/process/io.go NewBinaryIO). The container's stdout and stderr go straight into two pipes
// whose read ends the logger holds; the shim copies nothing.
//
//   create()  (any thread, e.g. the loop): makes the stdout, stderr and readiness pipes.
//   start()   (a pool thread, before runc create/exec; it blocks): spawns
//             `<path> k v k2 v2 ...` with only CONTAINER_ID and CONTAINER_NAMESPACE in its
//             environment, fd 3 = stdout read end, fd 4 = stderr read end, fd 5 = readiness
//             write end, nothing else inherited; then waits until the logger writes a byte
//             on fd 5 or closes it. binary-v2:// requires the byte ("logging binary did
//             not call ready"). Go waits without a bound; we give up after `ready_timeout`
//             (default 60 s, generous on purpose) and kill the logger.
//   take_*_writer(): the pipes' write ends, for runc's fds 1/2 (or the pty copy).
//   stop()    (any thread): closes the write ends still held, SIGTERM, waits up to
//             `stop_grace` (12 s, as Go) for the exit, then SIGKILL. Never blocks.
//
// The logger is started with Reaper::spawn_claimed(), so its exit goes to this object only
// and never reaches the task service's exit routing (it is not a container process). No
// parent-death signal: Linux would send it when the pool thread that spawned it retires.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/logger.h"
#include "shim/process/exit.h"
#include "shim/process/exit_future.h"
#include "shim/process/process_handle.h"
#include "shim/status.h"
#include "shim/stdio/process_io.h"  // BinaryLoggerSettings
#include "stdio/stdio_fd.h"
#include "stdio/stdio_uri.h"

namespace shim {

namespace upgrade {
class CarriedFds;
}

// The logger's arguments from the URI query, as Go's url.Query() read by NewBinaryCmd:
// "k v k2 v2 ...", '+' and %XX decoded, a key given twice appears once with its first
// value, a key without '=' gets "", pairs with ';' or a bad escape are dropped. Go walks a
// map (random order); we keep the query's order.
std::vector<std::string> binary_logger_args(std::string_view query);

// The exit of a stopped logger; std::nullopt when none was started or the reaper gave up.
using LoggerExitCallback = std::function<void(const std::optional<shim::ProcessExit>&)>;

class BinaryLogger : public std::enable_shared_from_this<BinaryLogger> {
 public:
  // `uri` has scheme binary or binary-v2. Callbacks run on `executor` (the loop).
  static shim::Status create(boost::asio::any_io_executor executor, const StdioUri& uri,
                             BinaryLoggerSettings settings, const shim::Logger& logger,
                             std::shared_ptr<BinaryLogger>* out);
  ~BinaryLogger();
  BinaryLogger(const BinaryLogger&) = delete;
  BinaryLogger& operator=(const BinaryLogger&) = delete;

  // Spawns the logger and waits until it is ready. Blocking: a pool thread only, once.
  // Errors: "failed to start binary process: ...", "failed to read from logging binary:
  // ...", "logging binary did not call ready (...)" (binary-v2), the timeout; the logger
  // is killed then. stop() during start() makes start() fail.
  shim::Status start();

  // The write ends of the stdout / stderr pipes (invalid Fd after the first call). Whoever
  // takes one must close it for the logger to see EOF.
  stdio::Fd take_stdout_writer();
  stdio::Fd take_stderr_writer();

  const std::string& path() const { return path_; }
  const std::vector<std::string>& argv() const { return argv_; }
  // -1 before start() spawned it.
  pid_t pid() const;

  // See the top of the file. `on_exit` (optional) runs once on the executor with the
  // logger's exit. Idempotent: later calls only add their callback.
  void stop(LoggerExitCallback on_exit = {});

  // Live upgrade (stdio/binary_logger_upgrade.cpp). A logger not started yet, running or
  // exited is carried: its pipes, and its pid and pidfd, whose exit the new program claims
  // from the reaper (Reaper::claim_running). One starting or being stopped refuses
  // (FailedPrecondition: try again). Executor only.
  shim::Status upgrade_ready() const;
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds) const;
  // The logger of `uri` as `saved` describes it, its exit claimed from settings.reaper
  // (before that reaper starts reaping).
  static shim::Status restore(boost::asio::any_io_executor executor, const StdioUri& uri,
                              BinaryLoggerSettings settings, const shim::Logger& logger,
                              const boost::json::value& saved, upgrade::CarriedFds* carried,
                              std::shared_ptr<BinaryLogger>* out);

 private:
  enum class Phase { kIdle, kStarting, kRunning, kDone };

  BinaryLogger(boost::asio::any_io_executor executor, BinaryLoggerSettings settings,
               const shim::Logger& logger, bool strict_ready);
  void set_program(const StdioUri& uri);
  shim::Status upgrade_ready_locked() const;  // mu_ held

  shim::Status wait_ready(int fd) const;
  void watch_exit();
  void on_exit(const std::optional<shim::ProcessExit>& exit);
  void terminate();  // executor only: SIGTERM, grace timer, SIGKILL
  void kill_now();   // after a failed start
  void finish_without_process(std::unique_lock<std::mutex>& lock);

  boost::asio::any_io_executor executor_;
  BinaryLoggerSettings settings_;
  shim::Logger logger_;
  bool strict_ready_;  // binary-v2
  std::string path_;
  std::vector<std::string> argv_;

  mutable std::mutex mu_;  // guards everything below except timer_
  Phase phase_ = Phase::kIdle;
  bool stop_requested_ = false;
  bool exited_ = false;
  bool starting_ = false;  // start() has not returned yet (a pool thread is in it)
  std::optional<shim::ProcessExit> exit_;
  pid_t pid_ = -1;
  shim::ProcessHandle handle_;
  shim::ExitFuture exit_future_;
  std::vector<LoggerExitCallback> callbacks_;
  stdio::Pipe stdout_pipe_;
  stdio::Pipe stderr_pipe_;
  stdio::Pipe ready_pipe_;

  std::shared_ptr<boost::asio::steady_timer> timer_;  // stop grace; executor only
};

}  // namespace shim
