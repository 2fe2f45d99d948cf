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

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "stdio/binary_logger.h"
#include "stdio/fifo_delivery.h"
#include "stdio/fifo_writer_opener.h"
#include "shim/fs.h"
#include "stdio/stdio_fd.h"
#include "stdio/stdio_uri.h"
#include "stdio/terminal_io.h"

namespace shim {

using stdio::CopyResult;
using stdio::CopyTarget;
using stdio::Fd;
using stdio::FifoWriterOpener;
using stdio::OpenedFifo;
using stdio::StreamCopier;

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::array<const char*, 3> kStreamNames = {"stdin", "stdout", "stderr"};

std::size_t index(StdioStream stream) { return static_cast<std::size_t>(stream); }

std::string parent_dir(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

class ProcessIO::Impl : public std::enable_shared_from_this<ProcessIO::Impl> {
 public:
  Impl(boost::asio::any_io_executor executor, StdioSpec spec, const shim::Logger& logger,
       const ProcessIOOptions& options)
      : executor_(std::move(executor)), spec_(std::move(spec)), logger_(logger),
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
  void close();

  int runtime_end(StdioStream stream) const {
    std::lock_guard lock(runtime_mu_);
    return runtime_ends_[index(stream)].get();
  }
  void close_runtime_ends() {
    std::lock_guard lock(runtime_mu_);
    for (Fd& fd : runtime_ends_) fd.reset();
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
    return spec_.*kFields[index(stream)];
  }

  shim::Status make_pipes(int io_uid, int io_gid);
  shim::Status setup_binary_logger(const StdioUri& uri);
  shim::Status setup_terminal();
  shim::Status start_terminal();
  shim::Status open_output_file(const std::string& path);
  shim::Status start_stdin();
  shim::Status start_output(StdioStream stream);
  void start_output_copy(StdioStream stream, CopyTarget target);
  void on_output_done(StdioStream stream, const CopyResult& result);
  void notify_drained(bool drained);
  // Bytes copied and bytes still unread in the output FIFOs: any change is progress.
  std::pair<std::uint64_t, std::size_t> output_progress() const;
  // Duplicates of the delivery probes (close() may close the originals meanwhile).
  std::vector<Fd> probe_copies() const;
  void settle_step(SteadyClock::time_point deadline, std::chrono::milliseconds stall,
                   std::pair<std::uint64_t, std::size_t> before, std::function<void(bool)> callback);

  boost::asio::any_io_executor executor_;
  StdioSpec spec_;
  shim::Logger logger_;
  ProcessIOOptions options_;
  bool null_ = false;
  bool started_ = false;
  bool closed_ = false;

  mutable std::mutex runtime_mu_;
  std::array<Fd, 3> runtime_ends_;  // guarded by runtime_mu_
  std::array<Fd, 3> shim_ends_;     // stdin: write end; stdout/stderr: read ends
  // A plain-file target shared by stdout and stderr (file://, or one non-FIFO path).
  std::shared_ptr<Fd> shared_file_;
  std::string shared_file_path_;

  Fd stdin_keeper_;
  std::array<std::shared_ptr<StreamCopier>, 3> copiers_;
  std::array<std::shared_ptr<FifoWriterOpener>, 3> openers_;
  // Our own readers of the output FIFOs (a copy of each keeper, which goes with its copy),
  // kept until close() to see what the client has not read yet.
  std::array<Fd, 3> delivery_probes_;
  int outputs_running_ = 0;
  std::uint64_t next_waiter_id_ = 0;
  std::vector<DrainWaiter> waiters_;
  std::shared_ptr<BinaryLogger> binary_logger_;  // binary:// stdout; set in setup only
  std::shared_ptr<TerminalIO> terminal_;         // terminal=true; set in setup only
};

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
  if (shim::Status status = BinaryLogger::create(executor_, uri, options_.binary_logger, logger_,
                                                 &binary_logger_);
      !status.ok()) {
    return status;
  }
  if (spec_.terminal) {
    binary_logger_->take_stderr_writer();  // closed: no stderr with a terminal
    return {};
  }
  std::lock_guard lock(runtime_mu_);
  runtime_ends_[index(StdioStream::kStdout)] = binary_logger_->take_stdout_writer();
  runtime_ends_[index(StdioStream::kStderr)] = binary_logger_->take_stderr_writer();
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
  if (shim::Status status = TerminalIO::create(executor_, spec_, logger_, &terminal_); !status.ok()) {
    return status;
  }
  outputs_running_ = 1;
  return {};
}

shim::Status ProcessIO::Impl::start_terminal() {
  Fd logger_stdout = binary_logger_ ? binary_logger_->take_stdout_writer() : Fd();
  std::weak_ptr<Impl> weak = weak_from_this();
  return terminal_->start(std::move(logger_stdout), &stdin_keeper_, [weak](const CopyResult& result) {
    if (auto self = weak.lock()) self->on_output_done(StdioStream::kStdout, result);
  });
}

// file://: created (with its parent dirs) before runc runs, as Go does; stdout and stderr
// both append to it through one shared writer.
shim::Status ProcessIO::Impl::open_output_file(const std::string& path) {
  if (shim::Status status = shim::make_dirs(parent_dir(path), 0755); !status.ok()) return status;
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return stdio::errno_status(fmt::format("open {}", path));
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
    const char* name = kStreamNames[index(stream)];
    if (::fchown(runtime_end.get(), io_uid, io_gid) < 0) {
      return stdio::errno_status(fmt::format("failed to chown {}", name));
    }
    if (shim::Status status = stdio::set_nonblocking(shim_end.get()); !status.ok()) return status;
    if (!input) ++outputs_running_;
    std::lock_guard lock(runtime_mu_);
    runtime_ends_[index(stream)] = std::move(runtime_end);
    shim_ends_[index(stream)] = std::move(shim_end);
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
  std::weak_ptr<Impl> weak = weak_from_this();
  copiers_[0] = StreamCopier::start(
      executor_, "stdin", std::move(reader), std::move(target), options_.copy_method,
      [weak](const CopyResult& result) {
        auto self = weak.lock();
        if (!self || result.status.ok()) return;
        // Usually EPIPE: the process closed its stdin or exited.
        self->logger_.debug("stdin copy ended", {{"error", result.status.message()}});
      });
  return {};
}

shim::Status ProcessIO::Impl::start_output(StdioStream stream) {
  const std::string& path = path_of(stream);
  if (path.empty()) return {};
  if (shared_file_) {
    start_output_copy(stream, CopyTarget{shared_file_, Fd()});
    return {};
  }
  Fd path_fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  struct stat st{};
  if (!path_fd.valid() || ::fstat(path_fd.get(), &st) < 0) {
    return stdio::errno_status(fmt::format("stat {}", path));
  }
  if (!S_ISFIFO(st.st_mode)) {
    // A plain path (Go: O_WRONLY|O_APPEND, no create); one writer when both name it.
    Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    if (!fd.valid()) {
      return stdio::errno_status(fmt::format("containerd-shim: opening file \"{}\" failed", path));
    }
    auto shared = std::make_shared<Fd>(std::move(fd));
    if (spec_.stdout == spec_.stderr) {
      shared_file_ = shared;
      shared_file_path_ = path;
    }
    start_output_copy(stream, CopyTarget{shared, Fd()});
    return {};
  }
  std::weak_ptr<Impl> weak = weak_from_this();
  openers_[index(stream)] = FifoWriterOpener::start(
      executor_, std::move(path_fd), path, [weak, stream](shim::Status status, OpenedFifo fifo) {
        auto self = weak.lock();
        if (!self || self->closed_) return;
        if (!status.ok()) {
          self->on_output_done(stream, CopyResult{0, status});
          return;
        }
        self->delivery_probes_[index(stream)] =
            Fd(::fcntl(fifo.keeper.get(), F_DUPFD_CLOEXEC, 0));
        auto writer = std::make_shared<Fd>(std::move(fifo.writer));
        self->start_output_copy(stream, CopyTarget{writer, std::move(fifo.keeper)});
      });
  return {};
}

void ProcessIO::Impl::start_output_copy(StdioStream stream, CopyTarget target) {
  std::weak_ptr<Impl> weak = weak_from_this();
  copiers_[index(stream)] = StreamCopier::start(
      executor_, kStreamNames[index(stream)], std::move(shim_ends_[index(stream)]),
      std::move(target), options_.copy_method, [weak, stream](const CopyResult& result) {
        if (auto self = weak.lock()) self->on_output_done(stream, result);
      });
}

void ProcessIO::Impl::on_output_done(StdioStream stream, const CopyResult& result) {
  if (!result.status.ok()) {
    logger_.warn(fmt::format("error copying {}", kStreamNames[index(stream)]),
                 {{"error", result.status.message()}});
  }
  // Our end of the process's pipe is closed with the copier; drop it too if the copy
  // never began (the FIFO could not be opened), so the process gets EPIPE, not a hang.
  shim_ends_[index(stream)].reset();
  if (--outputs_running_ == 0) notify_drained(true);
}

void ProcessIO::Impl::wait_drained(std::chrono::milliseconds timeout,
                                   std::function<void(bool)> callback) {
  if (drained() || closed_) {
    bool drained_now = drained();
    boost::asio::post(executor_, [callback = std::move(callback), drained_now] {
      callback(drained_now);
    });
    return;
  }
  std::uint64_t id = next_waiter_id_++;
  auto timer = std::make_shared<boost::asio::steady_timer>(executor_, timeout);
  waiters_.push_back(DrainWaiter{id, timer, std::move(callback)});
  timer->async_wait([weak = weak_from_this(), id](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    for (auto it = self->waiters_.begin(); it != self->waiters_.end(); ++it) {
      if (it->id != id) continue;
      auto expired = std::move(it->callback);
      self->waiters_.erase(it);
      expired(false);
      return;
    }
  });
}

std::vector<Fd> ProcessIO::Impl::probe_copies() const {
  std::vector<Fd> readers;
  for (const Fd& probe : delivery_probes_) {
    if (probe.valid()) readers.emplace_back(::fcntl(probe.get(), F_DUPFD_CLOEXEC, 0));
  }
  return readers;
}

std::pair<std::uint64_t, std::size_t> ProcessIO::Impl::output_progress() const {
  std::size_t unread = 0;
  for (const Fd& probe : delivery_probes_) unread += stdio::unread_bytes(probe.get());
  return {copied_bytes(StdioStream::kStdout) + copied_bytes(StdioStream::kStderr), unread};
}

void ProcessIO::Impl::wait_delivered(std::chrono::milliseconds timeout,
                                     std::function<void(bool)> callback) {
  const auto deadline = SteadyClock::now() + timeout;
  auto after_drain = [weak = weak_from_this(), deadline, callback](bool drained) mutable {
    auto self = weak.lock();
    if (!self || !drained || self->closed_) return callback(false);
    stdio::wait_until_read(self->executor_, self->probe_copies(),
                           stdio::FifoReadWait{.deadline = deadline}, std::move(callback));
  };
  wait_drained(timeout, std::move(after_drain));
}

void ProcessIO::Impl::wait_settled(std::chrono::milliseconds timeout, std::chrono::milliseconds stall,
                                   std::function<void(bool)> callback) {
  settle_step(SteadyClock::now() + timeout, stall, output_progress(), std::move(callback));
}

// Waits for the drain `stall` at a time, going on while the copies or the client moved.
void ProcessIO::Impl::settle_step(SteadyClock::time_point deadline, std::chrono::milliseconds stall,
                                  std::pair<std::uint64_t, std::size_t> before,
                                  std::function<void(bool)> callback) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  auto after = [weak = weak_from_this(), deadline, stall, before, callback](bool drained) mutable {
    auto self = weak.lock();
    if (!self || self->closed_) return callback(false);
    if (drained) {
      return stdio::wait_until_read(self->executor_, self->probe_copies(),
                                    stdio::FifoReadWait{.deadline = deadline, .stall = stall},
                                    std::move(callback));
    }
    auto now = self->output_progress();
    if (now == before || SteadyClock::now() >= deadline) return callback(false);
    self->settle_step(deadline, stall, now, std::move(callback));
  };
  wait_drained(std::clamp(left, std::chrono::milliseconds(0), stall), std::move(after));
}

void ProcessIO::Impl::notify_drained(bool drained) {
  std::vector<DrainWaiter> waiters = std::move(waiters_);
  waiters_.clear();
  for (DrainWaiter& waiter : waiters) {
    waiter.timer->cancel();
    boost::asio::post(executor_, [callback = std::move(waiter.callback), drained] {
      callback(drained);
    });
  }
}

std::uint64_t ProcessIO::Impl::copied_bytes(StdioStream stream) const {
  if (terminal_) return terminal_->copied_bytes(stream);
  const auto& copier = copiers_[index(stream)];
  return copier ? copier->bytes() : 0;
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
