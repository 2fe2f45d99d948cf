// ProcessIO's implementation, shared by process_io.cpp (setup, copies, close) and
// process_io_waits.cpp (waiting for the output to be copied out and read). Internal.
// Threads: everything but runtime_end/close_runtime_ends runs on the executor's strand.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/stdio/process_io.h"
#include "stdio/binary_logger.h"
#include "stdio/fifo_writer_opener.h"
#include "stdio/stdio_fd.h"
#include "stdio/stdio_uri.h"
#include "stdio/stream_copier.h"
#include "stdio/terminal_io.h"

namespace shim {

namespace upgrade {
class CarriedFds;
}  // namespace upgrade

inline std::size_t stream_index(StdioStream stream) { return static_cast<std::size_t>(stream); }

class ProcessIO::Impl : public std::enable_shared_from_this<ProcessIO::Impl> {
 public:
  Impl(boost::asio::any_io_executor executor, StdioSpec spec, const shim::Logger& logger,
       const ProcessIOOptions& options)
      : executor_(std::move(executor)),
        spec_(std::move(spec)),
        logger_(logger),
        options_(options) {}

  shim::Status setup(int io_uid, int io_gid);
  shim::Status start();
  void close_stdin() { stdin_keeper_.reset(); }
  void wait_drained(std::chrono::milliseconds timeout, std::function<void(bool)> callback);
  bool drained() const { return outputs_running_ == 0; }
  void wait_delivered(std::chrono::milliseconds timeout, std::function<void(bool)> callback);
  void wait_settled(std::chrono::milliseconds timeout, std::chrono::milliseconds stall,
                    std::function<void(bool)> callback);
  std::uint64_t copied_bytes(StdioStream stream) const;
  std::uint64_t buffered_bytes(StdioStream stream) const;
  std::uint64_t dropped_bytes(StdioStream stream) const;
  void close();
  // Live upgrade (process_io_upgrade.cpp; ProcessIO's methods say what they do).
  shim::Status upgrade_ready() const;
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds);
  void upgrade_aborted() { upgrade_made_.clear(); }
  shim::Status restore(const boost::json::value& saved, upgrade::CarriedFds* carried);

  int runtime_end(StdioStream stream) const {
    std::lock_guard lock(runtime_mu_);
    return runtime_ends_[stream_index(stream)].get();
  }
  void close_runtime_ends() {
    std::lock_guard lock(runtime_mu_);
    for (stdio::Fd& fd : runtime_ends_) fd.reset();
  }

  const StdioSpec& spec() const { return spec_; }
  bool is_null() const { return null_; }
  const boost::asio::any_io_executor& executor() const { return executor_; }
  const std::shared_ptr<BinaryLogger>& binary_logger() const { return binary_logger_; }
  // Set in setup only, so readable from any thread afterwards.
  const std::shared_ptr<TerminalIO>& terminal() const { return terminal_; }

 private:
  struct DrainWaiter {
    std::uint64_t id;
    std::shared_ptr<boost::asio::steady_timer> timer;
    std::function<void(bool)> callback;
  };

  const std::string& path_of(StdioStream stream) const {
    static const std::array<std::string StdioSpec::*, 3> kFields = {
        &StdioSpec::stdin, &StdioSpec::stdout, &StdioSpec::stderr};
    return spec_.*kFields[stream_index(stream)];
  }

  shim::Status make_pipes(int io_uid, int io_gid);
  shim::Status setup_binary_logger(const StdioUri& uri);
  shim::Status setup_terminal();
  shim::Status start_terminal();
  shim::Status open_output_file(const std::string& path);
  shim::Status start_stdin();
  shim::Status start_output(StdioStream stream);
  void start_fifo_opener(StdioStream stream, stdio::Fd fifo_path);
  void start_output_copy(StdioStream stream, stdio::CopyTarget target, bool buffered = false);
  stdio::StreamCopier::DoneHandler stdin_done_handler();
  stdio::StreamCopier::DoneHandler output_done_handler(StdioStream stream);
  std::function<void(const stdio::OverflowEpisode&)> overflow_handler(StdioStream stream);
  // Live upgrade (process_io_upgrade.cpp).
  shim::Status restore_binary_logger(const boost::json::value& saved, upgrade::CarriedFds* carried);
  shim::Status restore_copy(StdioStream stream, const boost::json::value& saved,
                            upgrade::CarriedFds* carried,
                            std::map<int, std::shared_ptr<stdio::Fd>>* targets);
  void log_overflow(StdioStream stream, const stdio::OverflowEpisode& episode) const;
  void on_output_done(StdioStream stream, const stdio::CopyResult& result);
  void notify_drained(bool drained);
  // Bytes copied and bytes still unread in the output FIFOs: any change is progress.
  std::pair<std::uint64_t, std::size_t> output_progress() const;
  // Duplicates of the delivery probes (close() may close the originals meanwhile).
  std::vector<stdio::Fd> probe_copies() const;
  void settle_step(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds stall,
                   std::pair<std::uint64_t, std::size_t> before,
                   std::function<void(bool)> callback);

  boost::asio::any_io_executor executor_;
  StdioSpec spec_;
  shim::Logger logger_;
  ProcessIOOptions options_;
  bool null_ = false;
  bool started_ = false;
  bool closed_ = false;

  mutable std::mutex runtime_mu_;
  std::array<stdio::Fd, 3> runtime_ends_;  // guarded by runtime_mu_
  std::array<stdio::Fd, 3> shim_ends_;     // stdin: write end; stdout/stderr: read ends
  // A plain-file target shared by stdout and stderr (file://, or one non-FIFO path).
  std::shared_ptr<stdio::Fd> shared_file_;
  std::string shared_file_path_;

  stdio::Fd stdin_keeper_;
  std::array<std::shared_ptr<stdio::StreamCopier>, 3> copiers_;
  std::array<std::shared_ptr<stdio::FifoWriterOpener>, 3> openers_;
  // Our own readers of the output FIFOs (a copy of each keeper, which goes with its copy),
  // kept until close() to see what the client has not read yet.
  std::array<stdio::Fd, 3> delivery_probes_;
  int outputs_running_ = 0;
  std::uint64_t next_waiter_id_ = 0;
  std::vector<DrainWaiter> waiters_;
  std::shared_ptr<BinaryLogger> binary_logger_;  // binary:// stdout; set in setup only
  std::shared_ptr<TerminalIO> terminal_;         // terminal=true; set in setup only
  std::vector<stdio::Fd> upgrade_made_;          // what save_for_upgrade() made (memfds)
};

}  // namespace shim
