#include "guest_process.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/write.hpp>

namespace shim_vm_agent {

namespace asio = boost::asio;

OutputStream::OutputStream(asio::any_io_executor executor, shim::UniqueFd fd)
    : pipe_(std::make_shared<asio::posix::stream_descriptor>(executor, fd.release())) {}

void OutputStream::read(std::size_t max_bytes, ReadDone done) {
  if (!valid() || eof_) return done({}, {}, true);
  if (reading_) {
    return done(shim::Status(shim::Code::kFailedPrecondition, "a read of this stream is under way"),
                {}, false);
  }
  reading_ = true;
  auto buffer = std::make_shared<std::string>(max_bytes, '\0');
  pipe_->async_read_some(asio::buffer(*buffer),
                         [this, pipe = pipe_, buffer, done = std::move(done)](
                             boost::system::error_code error, std::size_t size) {
                           // `this` lives while its pipe is open: close() comes first
                           // when it goes, so a handler that finds the pipe closed (also
                           // one queued before the close) touches nothing of it.
                           if (error == asio::error::operation_aborted || !pipe->is_open())
                             return done({}, {}, true);
                           reading_ = false;
                           if (error) {  // EOF, or EIO from a terminal whose last holder closed it
                             eof_ = true;
                             return done({}, {}, true);
                           }
                           buffer->resize(size);
                           done({}, std::move(*buffer), false);
                         });
}

void OutputStream::close() {
  if (!pipe_) return;
  boost::system::error_code ignored;
  pipe_->close(ignored);
  eof_ = true;
}

shim::Status make_pipes(bool stdin, bool stdout, bool stderr, bool terminal, ProcessPipes* pipes) {
  if (terminal) return shim::Pty::open(&pipes->pty);
  auto make = [](shim::UniqueFd* read_end, shim::UniqueFd* write_end) -> shim::Status {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return shim::Status(shim::Code::kInternal, fmt::format("pipe: {}", std::strerror(errno)));
    *read_end = shim::UniqueFd(fds[0]);
    *write_end = shim::UniqueFd(fds[1]);
    return {};
  };
  if (stdin) {
    if (auto s = make(&pipes->child_stdin, &pipes->stdin_writer); !s.ok()) return s;
  }
  if (stdout) {
    if (auto s = make(&pipes->stdout_reader, &pipes->child_stdout); !s.ok()) return s;
  }
  if (stderr) {
    if (auto s = make(&pipes->stderr_reader, &pipes->child_stderr); !s.ok()) return s;
  }
  return {};
}

GuestProcess::GuestProcess(asio::any_io_executor executor, std::string container_id,
                           std::string exec_id)
    : executor_(std::move(executor)),
      container_id_(std::move(container_id)),
      exec_id_(std::move(exec_id)) {}

void GuestProcess::started(shim::SpawnedProcess spawned, ProcessPipes pipes) {
  pid_ = spawned.pid;
  handle_ = std::move(spawned.handle);
  gate_ = std::move(spawned.gate);
  if (pipes.pty.valid()) {
    // Only the master stays: once the process and its children closed the slave, reads
    // end (EIO), so its output's end is seen. A dup for writes keeps the directions apart.
    master_ = shim::UniqueFd(::fcntl(pipes.pty.master(), F_DUPFD_CLOEXEC, 3));
    stdout_ = OutputStream(executor_, shim::UniqueFd(::fcntl(master_.get(), F_DUPFD_CLOEXEC, 3)));
    stdin_ = std::make_shared<asio::posix::stream_descriptor>(
        executor_, ::fcntl(master_.get(), F_DUPFD_CLOEXEC, 3));
    return;
  }
  if (pipes.stdin_writer.valid())
    stdin_ =
        std::make_shared<asio::posix::stream_descriptor>(executor_, pipes.stdin_writer.release());
  if (pipes.stdout_reader.valid())
    stdout_ = OutputStream(executor_, std::move(pipes.stdout_reader));
  if (pipes.stderr_reader.valid())
    stderr_ = OutputStream(executor_, std::move(pipes.stderr_reader));
}

void GuestProcess::write_stdin(std::string data, std::function<void(shim::Status)> done) {
  if (!stdin_ || !stdin_->is_open()) {
    return done(shim::Status(
        shim::Code::kFailedPrecondition,
        fmt::format("process {} has no open stdin", exec_id_.empty() ? container_id_ : exec_id_)));
  }
  auto buffer = std::make_shared<std::string>(std::move(data));
  asio::async_write(*stdin_, asio::buffer(*buffer),
                    [buffer, pipe = stdin_, done = std::move(done)](boost::system::error_code error,
                                                                    std::size_t) {
                      if (error) {
                        return done(shim::Status(shim::Code::kUnavailable,
                                                 fmt::format("write stdin: {}", error.message())));
                      }
                      done({});
                    });
}

void GuestProcess::close_stdin() {
  if (!stdin_) return;
  if (master_.valid()) {
    // A terminal has no end of input but ^D; send it as a terminal would.
    boost::system::error_code ignored;
    asio::write(*stdin_, asio::buffer("\x04", 1), ignored);
    return;
  }
  boost::system::error_code ignored;
  stdin_->close(ignored);
}

shim::Status GuestProcess::resize(unsigned width, unsigned height) const {
  if (!master_.valid()) return {};
  winsize size{};
  size.ws_row = static_cast<unsigned short>(height);
  size.ws_col = static_cast<unsigned short>(width);
  if (::ioctl(master_.get(), TIOCSWINSZ, &size) != 0) {
    return shim::Status(shim::Code::kInternal,
                        fmt::format("resize the terminal: {}", std::strerror(errno)));
  }
  return {};
}

void GuestProcess::exited(const shim::ProcessExit& exit) {
  exit_ = exit;
  handle_.mark_reaped();
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& waiter : waiters) waiter(exit);
}

void GuestProcess::on_exit(std::function<void(const shim::ProcessExit&)> waiter) {
  if (exit_) return waiter(*exit_);
  waiters_.push_back(std::move(waiter));
}

void GuestProcess::close() {
  stdout_.close();
  stderr_.close();
  if (stdin_) {
    boost::system::error_code ignored;
    stdin_->close(ignored);
  }
}

}  // namespace shim_vm_agent
