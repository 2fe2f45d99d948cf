#include "shim/stdio/process_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "shim/fs.h"
#include "stdio/output_target.h"
#include "stdio/process_io_impl.h"

namespace shim {

using stdio::CopyResult;
using stdio::CopyTarget;
using stdio::Fd;
using stdio::FifoWriterOpener;
using stdio::OpenedFifo;
using stdio::StreamCopier;

namespace {

constexpr std::array<const char*, 3> kStreamNames = {"stdin", "stdout", "stderr"};

}  // namespace

shim::Status ProcessIO::Impl::setup(int io_uid, int io_gid) {
  if (spec_.terminal) return setup_terminal();  // even with no stdio: runc needs the socket
  if (spec_.is_null()) {
    null_ = true;
    return {};
  }
  StdioUri uri;
  if (shim::Status status = parse_stdio_uri(spec_.stdout, &uri); !status.ok()) return status;
  if (uri.scheme == "binary" || uri.scheme == "binary-v2") return setup_binary_logger(uri);
  if (uri.scheme != "fifo" && uri.scheme != "file") {
    return shim::unknown(fmt::format("unknown STDIO scheme {}", uri.scheme));
  }
  if (uri.scheme == "file") {
    if (shim::Status status = open_output_file(uri.path); !status.ok()) return status;
  }
  return make_pipes(io_uid, io_gid);
}

// binary://: the logger gets the pipes' read ends; runc gets the write ends directly (no
// copy, no chown: Go's binary IO does neither), or, with a terminal, the pty copy takes
// the stdout one and stderr stays unused. Stdin is not connected.
shim::Status ProcessIO::Impl::setup_binary_logger(const StdioUri& uri) {
  if (!options_.binary_logger.usable()) {
    return shim::Status(shim::Code::kUnimplemented,
                        fmt::format("{}:// stdio loggers need a reaper and a spawner", uri.scheme));
  }
  if (shim::Status status =
          BinaryLogger::create(executor_, uri, options_.binary_logger, logger_, &binary_logger_);
      !status.ok()) {
    return status;
  }
  if (spec_.terminal) {
    binary_logger_->take_stderr_writer();  // closed: no stderr with a terminal
    return {};
  }
  std::lock_guard lock(runtime_mu_);
  runtime_ends_[stream_index(StdioStream::kStdout)] = binary_logger_->take_stdout_writer();
  runtime_ends_[stream_index(StdioStream::kStderr)] = binary_logger_->take_stderr_writer();
  return {};
}

// Terminal: no pipes (io_uid/io_gid do not apply: the runtime makes the pty); the one
// output is the console copy. A binary:// logger is set up as usual and gets the copy.
shim::Status ProcessIO::Impl::setup_terminal() {
  if (!spec_.stdout.empty()) {
    StdioUri uri;
    if (shim::Status status = parse_stdio_uri(spec_.stdout, &uri); !status.ok()) return status;
    if (uri.scheme == "binary" || uri.scheme == "binary-v2") {
      if (shim::Status status = setup_binary_logger(uri); !status.ok()) return status;
    } else if (uri.scheme != "fifo" && uri.scheme != "file") {
      return shim::unknown(fmt::format("unknown STDIO scheme {}", uri.scheme));
    }
  }
  if (shim::Status status = TerminalIO::create(executor_, spec_, logger_, &terminal_);
      !status.ok()) {
    return status;
  }
  outputs_running_ = 1;
  return {};
}

shim::Status ProcessIO::Impl::start_terminal() {
  Fd logger_stdout = binary_logger_ ? binary_logger_->take_stdout_writer() : Fd();
  std::weak_ptr<Impl> weak = weak_from_this();
  return terminal_->start(std::move(logger_stdout), &stdin_keeper_,
                          [weak](const CopyResult& result) {
                            if (auto self = weak.lock())
                              self->on_output_done(StdioStream::kStdout, result);
                          });
}

// file://: created (with its parent dirs) before runc runs, as Go does; stdout and stderr
// both append to it through one shared writer.
shim::Status ProcessIO::Impl::open_output_file(const std::string& path) {
  Fd fd;
  if (shim::Status status = stdio::open_output_file(path, &fd); !status.ok()) return status;
  shared_file_ = std::make_shared<Fd>(std::move(fd));
  shared_file_path_ = path;
  return {};
}

shim::Status ProcessIO::Impl::make_pipes(int io_uid, int io_gid) {
  for (StdioStream stream : {StdioStream::kStdin, StdioStream::kStdout, StdioStream::kStderr}) {
    if (path_of(stream).empty()) continue;
    stdio::Pipe pipe;
    if (shim::Status status = stdio::make_pipe(&pipe); !status.ok()) return status;
    bool input = stream == StdioStream::kStdin;
    Fd& runtime_end = input ? pipe.read_end : pipe.write_end;
    Fd& shim_end = input ? pipe.write_end : pipe.read_end;
    const char* name = kStreamNames[stream_index(stream)];
    if (::fchown(runtime_end.get(), io_uid, io_gid) < 0) {
      return stdio::errno_status(fmt::format("failed to chown {}", name));
    }
    if (shim::Status status = stdio::set_nonblocking(shim_end.get()); !status.ok()) return status;
    if (!input) ++outputs_running_;
    std::lock_guard lock(runtime_mu_);
    runtime_ends_[stream_index(stream)] = std::move(runtime_end);
    shim_ends_[stream_index(stream)] = std::move(shim_end);
  }
  return {};
}

shim::Status ProcessIO::Impl::start() {
  if (closed_) return shim::failed_precondition("process io: closed");
  if (started_) return shim::failed_precondition("process io: already started");
  started_ = true;
  if (terminal_) return start_terminal();
  if (null_ || binary_logger_) return {};
  if (shim::Status status = start_stdin(); !status.ok()) return status;
  for (StdioStream stream : {StdioStream::kStdout, StdioStream::kStderr}) {
    if (shim::Status status = start_output(stream); !status.ok()) return status;
  }
  return {};
}

shim::Status ProcessIO::Impl::start_stdin() {
  const std::string& path = spec_.stdin;
  if (path.empty()) return {};
  Fd reader;
  if (shim::Status status = stdio::open_stdin_fifo(path, &reader, &stdin_keeper_); !status.ok()) {
    return status;
  }

  CopyTarget target{std::make_shared<Fd>(std::move(shim_ends_[0])), Fd()};
  copiers_[0] = StreamCopier::start(executor_, "stdin", std::move(reader), std::move(target),
                                    options_.copy_method, stdin_done_handler());
  return {};
}

StreamCopier::DoneHandler ProcessIO::Impl::stdin_done_handler() {
  return [weak = weak_from_this()](const CopyResult& result) {
    auto self = weak.lock();
    if (!self || result.status.ok()) return;
    // Usually EPIPE: the process closed its stdin or exited.
    self->logger_.debug("stdin copy ended", {{"error", result.status.message()}});
  };
}

StreamCopier::DoneHandler ProcessIO::Impl::output_done_handler(StdioStream stream) {
  return [weak = weak_from_this(), stream](const CopyResult& result) {
    if (auto self = weak.lock()) self->on_output_done(stream, result);
  };
}

std::function<void(const stdio::OverflowEpisode&)> ProcessIO::Impl::overflow_handler(
    StdioStream stream) {
  return [weak = weak_from_this(), stream](const stdio::OverflowEpisode& episode) {
    if (auto self = weak.lock()) self->log_overflow(stream, episode);
  };
}

shim::Status ProcessIO::Impl::start_output(StdioStream stream) {
  const std::string& path = path_of(stream);
  if (path.empty()) return {};
  if (shared_file_) {
    start_output_copy(stream, CopyTarget{shared_file_, Fd()});
    return {};
  }
  stdio::OutputPath target;
  if (shim::Status status = stdio::open_output_path(path, &target); !status.ok()) return status;
  if (target.file.valid()) {
    // A plain path: one writer when stdout and stderr both name it.
    auto shared = std::make_shared<Fd>(std::move(target.file));
    if (spec_.stdout == spec_.stderr) {
      shared_file_ = shared;
      shared_file_path_ = path;
    }
    start_output_copy(stream, CopyTarget{shared, Fd()});
    return {};
  }
  start_fifo_opener(stream, std::move(target.fifo_path));
  return {};
}

// The output FIFO's writer, once the client has a reader; then the copy into it.
void ProcessIO::Impl::start_fifo_opener(StdioStream stream, Fd fifo_path) {
  std::weak_ptr<Impl> weak = weak_from_this();
  openers_[stream_index(stream)] = FifoWriterOpener::start(
      executor_, std::move(fifo_path), path_of(stream),
      [weak, stream](shim::Status status, OpenedFifo fifo) {
        auto self = weak.lock();
        if (!self || self->closed_) return;
        if (!status.ok()) {
          self->on_output_done(stream, CopyResult{0, status});
          return;
        }
        self->delivery_probes_[stream_index(stream)] =
            Fd(::fcntl(fifo.keeper.get(), F_DUPFD_CLOEXEC, 0));
        auto writer = std::make_shared<Fd>(std::move(fifo.writer));
        self->start_output_copy(stream, CopyTarget{writer, std::move(fifo.keeper)}, true);
      });
}

void ProcessIO::Impl::start_output_copy(StdioStream stream, CopyTarget target, bool buffered) {
  std::optional<stdio::CopyBuffering> buffering;
  if (buffered && options_.output_buffer.enabled()) {
    buffering = stdio::CopyBuffering{options_.output_buffer, overflow_handler(stream)};
  }
  copiers_[stream_index(stream)] = StreamCopier::start(
      executor_, kStreamNames[stream_index(stream)], std::move(shim_ends_[stream_index(stream)]),
      std::move(target), options_.copy_method, output_done_handler(stream), std::move(buffering));
}

// One line when a drop episode starts, one when it ends (with what it dropped).
void ProcessIO::Impl::log_overflow(StdioStream stream,
                                   const stdio::OverflowEpisode& episode) const {
  shim::LogFields fields = {{"stream", kStreamNames[stream_index(stream)]},
                            {"path", path_of(stream)},
                            {"buffered_bytes", episode.buffered},
                            {"buffer_bytes", episode.capacity},
                            {"dropped_bytes", episode.dropped},
                            {"dropped_total_bytes", episode.dropped_total}};
  if (episode.started) {
    logger_.warn("output buffer full, dropping output", fields);
  } else {
    logger_.warn("output delivery resumed after dropping output", fields);
  }
}

void ProcessIO::Impl::on_output_done(StdioStream stream, const CopyResult& result) {
  if (!result.status.ok()) {
    logger_.warn(fmt::format("error copying {}", kStreamNames[stream_index(stream)]),
                 {{"error", result.status.message()}});
  }
  // Our end of the process's pipe is closed with the copier; drop it too if the copy
  // never began (the FIFO could not be opened), so the process gets EPIPE, not a hang.
  shim_ends_[stream_index(stream)].reset();
  if (--outputs_running_ == 0) notify_drained(true);
}

void ProcessIO::Impl::close() {
  if (closed_) return;
  closed_ = true;
  for (auto& opener : openers_) {
    if (opener) opener->cancel();
  }
  for (auto& copier : copiers_) {
    if (copier) copier->cancel();
  }
  stdin_keeper_.reset();
  for (Fd& fd : shim_ends_) fd.reset();
  shared_file_.reset();
  for (Fd& fd : delivery_probes_) fd.reset();
  upgrade_made_.clear();
  close_runtime_ends();
  if (binary_logger_) binary_logger_->stop();
  if (terminal_) terminal_->close();
  notify_drained(drained());
}

// ---- ProcessIO ----

shim::Status ProcessIO::create(boost::asio::any_io_executor executor, const StdioSpec& spec,
                               int io_uid, int io_gid, const shim::Logger& logger,
                               std::unique_ptr<ProcessIO>* io, const ProcessIOOptions& options) {
  auto impl = std::make_shared<Impl>(std::move(executor), spec, logger, options);
  if (shim::Status status = impl->setup(io_uid, io_gid); !status.ok()) return status;
  io->reset(new ProcessIO(std::move(impl)));
  return {};
}

ProcessIO::ProcessIO(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

ProcessIO::~ProcessIO() { close(); }

const StdioSpec& ProcessIO::spec() const { return impl_->spec(); }
bool ProcessIO::is_null() const { return impl_->is_null(); }
int ProcessIO::runtime_stdin() const { return impl_->runtime_end(StdioStream::kStdin); }
int ProcessIO::runtime_stdout() const { return impl_->runtime_end(StdioStream::kStdout); }
int ProcessIO::runtime_stderr() const { return impl_->runtime_end(StdioStream::kStderr); }
void ProcessIO::close_runtime_ends() { impl_->close_runtime_ends(); }
shim::Status ProcessIO::start() { return impl_->start(); }
void ProcessIO::close_stdin() { impl_->close_stdin(); }
void ProcessIO::wait_drained(std::chrono::milliseconds timeout,
                             std::function<void(bool drained)> callback) {
  impl_->wait_drained(timeout, std::move(callback));
}
bool ProcessIO::drained() const { return impl_->drained(); }
void ProcessIO::wait_delivered(std::chrono::milliseconds timeout,
                               std::function<void(bool delivered)> callback) {
  impl_->wait_delivered(timeout, std::move(callback));
}
void ProcessIO::wait_settled(std::chrono::milliseconds timeout, std::chrono::milliseconds stall,
                             std::function<void(bool settled)> callback) {
  impl_->wait_settled(timeout, stall, std::move(callback));
}
std::uint64_t ProcessIO::copied_bytes(StdioStream stream) const {
  return impl_->copied_bytes(stream);
}
std::uint64_t ProcessIO::buffered_bytes(StdioStream stream) const {
  return impl_->buffered_bytes(stream);
}
std::uint64_t ProcessIO::dropped_bytes(StdioStream stream) const {
  return impl_->dropped_bytes(stream);
}

std::function<shim::Status()> ProcessIO::logger_starter() const {
  std::shared_ptr<BinaryLogger> logger = impl_->binary_logger();
  if (!logger) return [] { return shim::Status(); };
  return [logger] {
    shim::Status status = logger->start();
    if (status.ok()) return status;
    return shim::unknown(fmt::format("failed to create init process I/O: {}", status.message()));
  };
}

stdio::Fd ProcessIO::take_logger_stdout_writer() {
  const std::shared_ptr<BinaryLogger>& logger = impl_->binary_logger();
  return logger ? logger->take_stdout_writer() : stdio::Fd();
}

pid_t ProcessIO::logger_pid() const {
  const std::shared_ptr<BinaryLogger>& logger = impl_->binary_logger();
  return logger ? logger->pid() : -1;
}

void ProcessIO::after_logger_exit(std::function<void()> next) {
  const std::shared_ptr<BinaryLogger>& logger = impl_->binary_logger();
  if (!logger) return next();
  logger->stop([next = std::move(next)](const std::optional<shim::ProcessExit>&) { next(); });
}

std::string ProcessIO::console_socket_path() const {
  const std::shared_ptr<TerminalIO>& terminal = impl_->terminal();
  return terminal ? terminal->console_socket_path() : std::string();
}

std::function<shim::Status()> ProcessIO::console_receiver() const {
  std::shared_ptr<TerminalIO> terminal = impl_->terminal();
  if (!terminal) return [] { return shim::Status(); };
  return [terminal] {
    shim::Status status = terminal->receive_console();
    if (status.ok()) terminal->wait_output_reader();
    return status;
  };
}

shim::Status ProcessIO::resize(std::uint32_t width, std::uint32_t height) {
  const std::shared_ptr<TerminalIO>& terminal = impl_->terminal();
  return terminal ? terminal->resize(width, height) : shim::Status();
}

void ProcessIO::process_exited() {
  if (const std::shared_ptr<TerminalIO>& terminal = impl_->terminal()) terminal->process_exited();
}

void ProcessIO::close() {
  boost::asio::dispatch(impl_->executor(), [impl = impl_] { impl->close(); });
}

}  // namespace shim
