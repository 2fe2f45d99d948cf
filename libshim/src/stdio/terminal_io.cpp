#include "stdio/terminal_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "stdio/output_target.h"
#include "stdio/stdio_uri.h"

namespace shim {

using stdio::CopyResult;
using stdio::CopyTarget;
using stdio::Fd;

TerminalIO::TerminalIO(boost::asio::any_io_executor executor, StdioSpec spec,
                       const shim::Logger& logger, std::shared_ptr<shim::ConsoleSocket> socket)
    : executor_(std::move(executor)),
      spec_(std::move(spec)),
      logger_(logger),
      socket_path_(socket ? socket->path() : std::string()),
      socket_(std::move(socket)) {}

TerminalIO::~TerminalIO() { close(); }

shim::Status TerminalIO::create(boost::asio::any_io_executor executor, StdioSpec spec,
                                const shim::Logger& logger, std::shared_ptr<TerminalIO>* terminal) {
  std::unique_ptr<shim::ConsoleSocket> socket;
  if (shim::Status status = shim::ConsoleSocket::create(&socket); !status.ok()) {
    return shim::unknown(
        fmt::format("failed to create OCI runtime console socket: {}", status.message()));
  }
  *terminal = std::make_shared<TerminalIO>(std::move(executor), std::move(spec), logger,
                                           std::shared_ptr<shim::ConsoleSocket>(std::move(socket)));
  return {};
}

shim::Status TerminalIO::receive_console(std::chrono::milliseconds timeout) {
  std::shared_ptr<shim::ConsoleSocket> socket;
  {
    std::lock_guard lock(mu_);
    if (closed_ || !socket_) return shim::unknown("failed to retrieve console master: closed");
    socket = socket_;  // kept alive by us while we wait, even if close() drops it
  }
  int fd = -1;
  if (shim::Status status = socket->receive_fd(timeout, &fd); !status.ok()) {
    return shim::Status(status.code(),
                        fmt::format("failed to retrieve console master: {}", status.message()));
  }
  Fd master(fd);
  std::lock_guard lock(mu_);
  if (closed_) return shim::unknown("failed to retrieve console master: closed");
  master_ = std::move(master);
  return {};
}

void TerminalIO::wait_output_reader(std::chrono::milliseconds timeout) {
  StdioUri uri;
  if (spec_.stdout.empty() || !parse_stdio_uri(spec_.stdout, &uri).ok() || uri.scheme != "fifo")
    return;
  bool fifo = false;
  if (!stdio::is_fifo(spec_.stdout, &fifo).ok() || !fifo) return;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto delay = std::chrono::milliseconds(1);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
    }
    // O_NONBLOCK: ENXIO while there is no reader (a reader blocked in its open counts).
    Fd writer(::open(spec_.stdout.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (writer.valid()) {
      Fd keeper(::open(spec_.stdout.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
      if (!keeper.valid()) return;
      std::lock_guard lock(mu_);
      if (!closed_) opened_output_ = stdio::OpenedFifo{std::move(writer), std::move(keeper)};
      return;
    }
    if (errno != ENXIO) return;
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    std::this_thread::sleep_for(std::min(delay, left));
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
}

shim::Status TerminalIO::start(Fd logger_stdout, Fd* stdin_keeper, OutputDone output_done) {
  Fd master;
  stdio::OpenedFifo opened;
  {
    std::lock_guard lock(mu_);
    if (closed_) return shim::failed_precondition("terminal io: closed");
    master = std::move(master_);
    opened = std::move(opened_output_);
    socket_.reset();  // the runtime is done with it: remove it and its dir now
  }
  if (!master.valid()) return shim::failed_precondition("terminal io: no console master received");
  if (copier_) return shim::failed_precondition("terminal io: already started");
  if (shim::Status status = stdio::ConsoleCopier::create(executor_, std::move(master), &copier_);
      !status.ok()) {
    return shim::unknown(fmt::format("failed to start console copy: {}", status.message()));
  }
  output_done_ = std::move(output_done);
  if (shim::Status status = start_input(stdin_keeper); !status.ok()) return status;
  if (opened.writer.valid()) {
    on_output_opened({}, std::move(opened));
  } else if (shim::Status status = start_output(std::move(logger_stdout)); !status.ok()) {
    return status;
  }
  if (exited_) copier_->drain();
  return {};
}

// The stdin copy's EOF (CloseIO and the client both done) hangs the terminal up, as Go does.
shim::Status TerminalIO::start_input(Fd* stdin_keeper) {
  const std::string& path = spec_.stdin;
  if (path.empty()) return {};
  Fd reader;
  if (shim::Status status = stdio::open_stdin_fifo(path, &reader, stdin_keeper); !status.ok()) {
    return status;
  }
  copier_->start_input(std::move(reader), input_done_handler());
  return {};
}

stdio::ConsoleCopier::DoneHandler TerminalIO::input_done_handler() {
  return [weak = weak_from_this()](const CopyResult& result) {
    auto self = weak.lock();
    if (!self || !self->copier_) return;
    if (!result.status.ok()) {
      // Usually EIO: the terminal is gone with its process.
      self->logger_.debug("console stdin copy ended", {{"error", result.status.message()}});
      return;
    }
    self->copier_->hang_up();
  };
}

stdio::ConsoleCopier::DoneHandler TerminalIO::output_done_handler() {
  return [weak = weak_from_this()](const CopyResult& result) {
    if (auto self = weak.lock()) self->on_output_done(result);
  };
}

void TerminalIO::start_fifo_opener(Fd fifo_path) {
  std::weak_ptr<TerminalIO> weak = weak_from_this();
  opener_ =
      stdio::FifoWriterOpener::start(executor_, std::move(fifo_path), spec_.stdout,
                                     [weak](shim::Status status, stdio::OpenedFifo fifo) {
                                       if (auto self = weak.lock())
                                         self->on_output_opened(std::move(status), std::move(fifo));
                                     });
}

shim::Status TerminalIO::start_output(Fd logger_stdout) {
  auto done = output_done_handler();
  if (logger_stdout.valid()) {
    copier_->start_output(CopyTarget{std::make_shared<Fd>(std::move(logger_stdout)), Fd()}, done);
    return {};
  }
  if (spec_.stdout.empty()) {
    copier_->start_output(CopyTarget{}, done);  // nobody listens: keep the pty from filling up
    return {};
  }
  StdioUri uri;
  if (shim::Status status = parse_stdio_uri(spec_.stdout, &uri); !status.ok()) return status;
  if (uri.scheme == "binary" || uri.scheme == "binary-v2") {
    return shim::Status(shim::Code::kFailedPrecondition,
                        "failed to start console copy: the binary:// logger's stdout pipe is gone");
  }
  if (uri.scheme == "file") {
    Fd file;
    if (shim::Status s = stdio::open_output_file(uri.path, &file); !s.ok()) return s;
    copier_->start_output(CopyTarget{std::make_shared<Fd>(std::move(file)), Fd()}, done);
    return {};
  }
  const std::string& path = spec_.stdout;
  stdio::OutputPath target;
  if (shim::Status s = stdio::open_output_path(path, &target); !s.ok()) return s;
  if (target.file.valid()) {
    copier_->start_output(CopyTarget{std::make_shared<Fd>(std::move(target.file)), Fd()}, done);
    return {};
  }
  start_fifo_opener(std::move(target.fifo_path));
  return {};
}

void TerminalIO::on_output_opened(shim::Status status, stdio::OpenedFifo fifo) {
  if (!copier_) return;
  if (!status.ok()) {
    on_output_done(CopyResult{0, std::move(status)});
    return;
  }
  copier_->start_output(
      CopyTarget{std::make_shared<Fd>(std::move(fifo.writer)), std::move(fifo.keeper)},
      output_done_handler());
}

void TerminalIO::on_output_done(const CopyResult& result) {
  OutputDone done = std::move(output_done_);
  output_done_ = nullptr;
  if (done) done(result);
}

void TerminalIO::process_exited() {
  exited_ = true;
  if (copier_) copier_->drain();
}

shim::Status TerminalIO::resize(std::uint32_t width, std::uint32_t height) {
  if (!copier_) return {};
  return copier_->resize(static_cast<std::uint16_t>(width), static_cast<std::uint16_t>(height));
}

std::uint64_t TerminalIO::copied_bytes(StdioStream stream) const {
  if (!copier_) return 0;
  if (stream == StdioStream::kStdin) return copier_->input_bytes();
  if (stream == StdioStream::kStdout) return copier_->output_bytes();
  return 0;
}

void TerminalIO::close() {
  if (opener_) opener_->cancel();
  if (copier_) copier_->cancel();
  output_done_ = nullptr;
  std::lock_guard lock(mu_);
  closed_ = true;
  socket_.reset();
  master_.reset();
  opened_output_ = stdio::OpenedFifo{};
}

}  // namespace shim
