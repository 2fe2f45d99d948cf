#include "process_relay.h"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "shim/stdio/console_sender.h"

namespace shim_vm {

namespace asio = boost::asio;
using shim::Status;

namespace {

constexpr std::uint32_t kReadBytes = 128 * 1024;
// How long an exit waits for the rest of its output (a child that kept the pipe open).
constexpr std::chrono::seconds kDrainTimeout{2};
constexpr int kLostAgentStatus = 255;

int dup_fd(int fd) { return fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 3); }

}  // namespace

ProcessRelay::ProcessRelay(asio::any_io_executor executor, std::shared_ptr<AgentClient> agent,
                           shim::Logger& logger, std::string id, std::string exec_id,
                           std::shared_ptr<shim::InstanceEvents> events)
    : executor_(std::move(executor)),
      agent_(std::move(agent)),
      logger_(logger),
      id_(std::move(id)),
      exec_id_(std::move(exec_id)),
      events_(std::move(events)) {}

Status ProcessRelay::take_stdio(const shim::ProcessStdio& stdio) {
  if (stdio.terminal()) {
    shim::Pty pty;
    if (Status s = shim::Pty::open(&pty); !s.ok()) return s;
    // The guest's terminal does the line discipline; the host pty passes bytes as they are.
    termios raw{};
    if (::tcgetattr(pty.slave(), &raw) == 0) {
      ::cfmakeraw(&raw);
      ::tcsetattr(pty.slave(), TCSANOW, &raw);
    }
    if (Status s = shim::send_console(stdio.console_socket, pty.master(), pty.name()); !s.ok())
      return s;
    out_[1] = std::make_shared<Descriptor>(executor_, dup_fd(pty.slave()));
    in_ = std::make_shared<Descriptor>(executor_, dup_fd(pty.slave()));
    want_stdin_ = true;
    pty_ = std::move(pty);
    return {};
  }
  if (stdio.stdout >= 0) out_[1] = std::make_shared<Descriptor>(executor_, dup_fd(stdio.stdout));
  if (stdio.stderr >= 0) out_[2] = std::make_shared<Descriptor>(executor_, dup_fd(stdio.stderr));
  if (stdio.stdin >= 0) {
    in_ = std::make_shared<Descriptor>(executor_, dup_fd(stdio.stdin));
    want_stdin_ = true;
  }
  return {};
}

agent::Stdio ProcessRelay::agent_stdio() const {
  agent::Stdio stdio;
  stdio.set_terminal(pty_.valid());
  stdio.set_stdin(want_stdin_);
  stdio.set_stdout(out_[1] != nullptr);
  stdio.set_stderr(out_[2] != nullptr && !pty_.valid());
  return stdio;
}

void ProcessRelay::start() {
  asio::post(executor_, [self = shared_from_this()] {
    for (int stream : {1, 2}) {
      if (self->out_[stream]) {
        self->output_open_[stream] = true;
        self->read_output(stream);
      }
    }
    if (self->in_) self->read_stdin();
    self->watch_exit();
  });
}

void ProcessRelay::read_output(int stream) {
  agent::ReadOutputRequest request;
  request.set_id(id_);
  request.set_exec_id(exec_id_);
  request.set_stream(static_cast<std::uint32_t>(stream));
  request.set_max_bytes(kReadBytes);
  agent_->async<agent::ReadOutputResponse>(
      "ReadOutput", request,
      [self = shared_from_this(), stream](Status status, agent::ReadOutputResponse response) {
        if (self->stopped_) return;
        if (!status.ok() || response.eof()) return self->output_done(stream);
        auto data = std::make_shared<std::string>(std::move(*response.mutable_data()));
        auto out = self->out_[stream];
        asio::async_write(*out, asio::buffer(*data),
                          [self, data, stream](boost::system::error_code error, std::size_t) {
                            // Nobody reads on the host any more: keep draining the guest's
                            // pipe, or the process would block on it.
                            if (error && !self->stopped_) {
                              boost::system::error_code ignored;
                              self->out_[stream]->close(ignored);
                            }
                            if (!self->stopped_) self->read_output(stream);
                          });
      });
}

void ProcessRelay::output_done(int stream) {
  output_open_[stream] = false;
  if (exit_) report_exit_when_drained();
}

void ProcessRelay::read_stdin() {
  auto buffer = std::make_shared<std::array<char, 64 * 1024>>();
  in_->async_read_some(asio::buffer(*buffer), [self = shared_from_this(), buffer](
                                                  boost::system::error_code error,
                                                  std::size_t size) {
    if (self->stopped_ || self->reported_) return;
    if (error) {  // EOF: containerd closed stdin (CloseIO), or a terminal's end
      if (self->pty_.valid()) return;
      agent::ProcessRequest request;
      request.set_id(self->id_);
      request.set_exec_id(self->exec_id_);
      self->agent_->async<agent::Empty>("CloseStdin", request, [](Status, agent::Empty) {});
      return;
    }
    agent::WriteStdinRequest request;
    request.set_id(self->id_);
    request.set_exec_id(self->exec_id_);
    request.set_data(buffer->data(), size);
    self->agent_->async<agent::Empty>("WriteStdin", request, [self](Status status, agent::Empty) {
      if (status.ok()) self->read_stdin();  // else the process is gone or ignores stdin
    });
  });
}

void ProcessRelay::watch_exit() {
  agent::ProcessRequest request;
  request.set_id(id_);
  request.set_exec_id(exec_id_);
  agent_->async<agent::WaitProcessResponse>(
      "WaitProcess", request,
      [self = shared_from_this()](Status status, agent::WaitProcessResponse response) {
        if (self->stopped_) return;
        if (!status.ok()) {
          self->logger_.warn(
              "lost the guest process",
              {{"id", self->id_}, {"exec_id", self->exec_id_}, {"error", status.message()}});
          return self->exited(kLostAgentStatus, std::chrono::system_clock::now());
        }
        // The host's clock, not the guest's: a TCG guest's drifts, and containerd compares
        // this time with the start it stamped itself.
        self->exited(response.exit_status(), std::chrono::system_clock::now());
      });
}

void ProcessRelay::exited(int status, std::chrono::system_clock::time_point at) {
  exit_ = {status, at};
  drain_timer_.emplace(executor_, kDrainTimeout);
  drain_timer_->async_wait([self = shared_from_this()](boost::system::error_code error) {
    if (error) return;
    self->output_open_ = {false, false, false};
    self->report_exit_when_drained();
  });
  report_exit_when_drained();
}

void ProcessRelay::report_exit_when_drained() {
  if (reported_ || stopped_ || output_open_[1] || output_open_[2]) return;
  reported_ = true;
  if (drain_timer_) drain_timer_->cancel();
  // Our copies of the write ends go: libshim's readers see the end of the output.
  boost::system::error_code ignored;
  for (auto& out : out_) {
    if (out) out->close(ignored);
  }
  if (in_) in_->close(ignored);
  events_->process_exited(pid_, exit_->first, exit_->second);
}

void ProcessRelay::stop() {
  asio::post(executor_, [self = shared_from_this()] {
    self->stopped_ = true;
    if (self->drain_timer_) self->drain_timer_->cancel();
    boost::system::error_code ignored;
    for (auto& out : self->out_) {
      if (out) out->close(ignored);
    }
    if (self->in_) self->in_->close(ignored);
  });
}

}  // namespace shim_vm
