#include "stdio/binary_logger.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include "gocompat/go_url.h"
#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/service_context.h"

namespace shim {

namespace {

std::string ready_error(std::string_view what) {
  return fmt::format("failed to read from logging binary: {}", what);
}

}  // namespace

BinaryLoggerSettings binary_logger_settings(shim::ServiceContext& context, std::string process_id) {
  BinaryLoggerSettings settings;
  settings.reaper = &context.reaper;
  settings.spawner = &context.spawner;
  settings.process_id = std::move(process_id);
  settings.ns = context.identity.ns;
  return settings;
}

std::vector<std::string> binary_logger_args(std::string_view query) {
  std::vector<std::string> args;
  std::set<std::string> seen;
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    // Go (1.17+) rejects ';' separators: such a pair is dropped with an error Query() ignores.
    if (pair.empty() || pair.find(';') != std::string_view::npos) continue;
    std::size_t eq = pair.find('=');
    std::string key;
    std::string value;
    if (!go_url_unescape(pair.substr(0, eq), GoUnescape::kQuery, &key)) continue;
    if (eq != std::string_view::npos &&
        !go_url_unescape(pair.substr(eq + 1), GoUnescape::kQuery, &value)) {
      continue;
    }
    if (!seen.insert(key).second) continue;  // Go passes only a key's first value
    args.push_back(std::move(key));
    args.push_back(std::move(value));
  }
  return args;
}

// ---- BinaryLogger ----

BinaryLogger::BinaryLogger(boost::asio::any_io_executor executor, BinaryLoggerSettings settings,
                           const shim::Logger& logger, bool strict_ready)
    : executor_(std::move(executor)),
      settings_(std::move(settings)),
      logger_(logger),
      strict_ready_(strict_ready) {}

BinaryLogger::~BinaryLogger() = default;

shim::Status BinaryLogger::create(boost::asio::any_io_executor executor, const StdioUri& uri,
                                  BinaryLoggerSettings settings, const shim::Logger& logger,
                                  std::shared_ptr<BinaryLogger>* out) {
  if (!settings.usable()) {
    return shim::failed_precondition(fmt::format("{}:// logger: no reaper or spawner", uri.scheme));
  }
  if (uri.path.empty()) return shim::unknown("failed to start binary process: exec: no command");
  std::shared_ptr<BinaryLogger> self(new BinaryLogger(std::move(executor), std::move(settings),
                                                      logger, uri.scheme == "binary-v2"));
  self->set_program(uri);
  if (auto s = stdio::make_pipe(&self->stdout_pipe_); !s.ok()) {
    return shim::unknown(fmt::format("failed to create stdout pipes: {}", s.message()));
  }
  if (auto s = stdio::make_pipe(&self->stderr_pipe_); !s.ok()) {
    return shim::unknown(fmt::format("failed to create stderr pipes: {}", s.message()));
  }
  if (auto s = stdio::make_pipe(&self->ready_pipe_); !s.ok()) return s;
  *out = std::move(self);
  return {};
}

void BinaryLogger::set_program(const StdioUri& uri) {
  path_ = uri.path;
  argv_ = {uri.path};
  for (std::string& arg : binary_logger_args(uri.query)) argv_.push_back(std::move(arg));
}

stdio::Fd BinaryLogger::take_stdout_writer() {
  std::lock_guard lock(mu_);
  return std::move(stdout_pipe_.write_end);
}

stdio::Fd BinaryLogger::take_stderr_writer() {
  std::lock_guard lock(mu_);
  return std::move(stderr_pipe_.write_end);
}

pid_t BinaryLogger::pid() const {
  std::lock_guard lock(mu_);
  return pid_;
}

shim::Status BinaryLogger::start() {
  struct Started {  // start() returned, however
    BinaryLogger* self;
    ~Started() {
      std::lock_guard lock(self->mu_);
      self->starting_ = false;
    }
  };
  Started started{this};
  stdio::Fd stdout_reader, stderr_reader, ready_reader, ready_writer;
  {
    std::lock_guard lock(mu_);
    if (phase_ != Phase::kIdle) return shim::failed_precondition("binary logger: already started");
    phase_ = Phase::kStarting;
    starting_ = true;
    stdout_reader = std::move(stdout_pipe_.read_end);
    stderr_reader = std::move(stderr_pipe_.read_end);
    ready_reader = std::move(ready_pipe_.read_end);
    ready_writer = std::move(ready_pipe_.write_end);
  }
  shim::SpawnRequest request;
  request.path = path_;
  request.argv = argv_;
  request.env = std::vector<std::string>{"CONTAINER_ID=" + settings_.process_id,
                                         "CONTAINER_NAMESPACE=" + settings_.ns};
  request.fds = {{3, stdout_reader.get()}, {4, stderr_reader.get()}, {5, ready_writer.get()}};
  shim::ClaimedProcess child;
  shim::Status spawned = settings_.reaper->spawn_claimed(*settings_.spawner, request, &child);
  // The logger holds its own copies now; ours would keep EOF from ever coming.
  stdout_reader.reset();
  stderr_reader.reset();
  ready_writer.reset();

  std::unique_lock lock(mu_);
  if (!spawned.ok()) {
    finish_without_process(lock);
    return shim::unknown(fmt::format("failed to start binary process: {}", spawned.message()));
  }
  phase_ = Phase::kRunning;
  pid_ = child.pid;
  handle_ = std::move(child.handle);
  exit_future_ = child.exit;
  bool stopping = stop_requested_;
  lock.unlock();
  watch_exit();
  if (stopping) {
    boost::asio::dispatch(executor_, [self = shared_from_this()] { self->terminate(); });
    return shim::unknown("binary logger stopped while starting");
  }
  shim::Status ready = wait_ready(ready_reader.get());
  if (!ready.ok()) {
    kill_now();
    return ready;
  }
  lock.lock();
  if (stop_requested_) return shim::unknown("binary logger stopped while starting");
  return {};
}

// One byte or EOF, as Go's single Read; binary-v2 needs the byte.
shim::Status BinaryLogger::wait_ready(int fd) const {
  auto deadline = std::chrono::steady_clock::now() + settings_.ready_timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return shim::unknown(fmt::format("logging binary {} did not get ready within {} ms", path_,
                                       settings_.ready_timeout.count()));
    }
    pollfd readable{fd, POLLIN, 0};
    int polled = ::poll(&readable, 1, static_cast<int>(std::min<long long>(left.count(), 60000)));
    if (polled < 0 && errno == EINTR) continue;
    if (polled < 0) return shim::unknown(ready_error(std::strerror(errno)));
    if (polled == 0) continue;
    char byte = 0;
    ssize_t n = ::read(fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return shim::unknown(ready_error(std::strerror(errno)));
    if (n == 0 && strict_ready_) {
      return shim::unknown(
          "logging binary did not call ready (it may have crashed or exited prematurely)");
    }
    return {};
  }
}

void BinaryLogger::watch_exit() {
  exit_future_.async_wait(
      executor_, [self = shared_from_this()](const std::optional<shim::ProcessExit>& exit) {
        self->on_exit(exit);
      });
}

void BinaryLogger::on_exit(const std::optional<shim::ProcessExit>& exit) {
  std::vector<LoggerExitCallback> callbacks;
  {
    std::lock_guard lock(mu_);
    exited_ = true;
    exit_ = exit;
    phase_ = Phase::kDone;
    handle_.mark_reaped();
    callbacks.swap(callbacks_);
  }
  if (timer_) timer_->cancel();
  if (exit) {
    logger_.debug("logging binary exited",
                  {{"pid", std::to_string(exit->pid)}, {"status", std::to_string(exit->status)}});
  }
  for (auto& callback : callbacks) callback(exit);
}

void BinaryLogger::stop(LoggerExitCallback on_exit) {
  std::unique_lock lock(mu_);
  if (on_exit) callbacks_.push_back(std::move(on_exit));
  // As Go's Close: our write ends first (the logger sees EOF once runc's copies are gone).
  stdout_pipe_.write_end.reset();
  stderr_pipe_.write_end.reset();
  if (phase_ == Phase::kDone) return finish_without_process(lock);
  if (stop_requested_) return;  // under way; the exit runs the callback
  stop_requested_ = true;
  if (phase_ == Phase::kIdle) return finish_without_process(lock);
  if (phase_ == Phase::kStarting) return;  // start() sees the request after the spawn
  lock.unlock();
  boost::asio::dispatch(executor_, [self = shared_from_this()] { self->terminate(); });
}

// No process to wait for (never started, spawn failed) or its exit is known already:
// hand the callbacks what there is. Called with `lock` held; releases it.
void BinaryLogger::finish_without_process(std::unique_lock<std::mutex>& lock) {
  phase_ = Phase::kDone;
  stdout_pipe_ = {};
  stderr_pipe_ = {};
  ready_pipe_ = {};
  std::vector<LoggerExitCallback> callbacks;
  callbacks.swap(callbacks_);
  std::optional<shim::ProcessExit> exit = exit_;
  lock.unlock();
  for (auto& callback : callbacks) {
    boost::asio::post(executor_, [callback = std::move(callback), exit] { callback(exit); });
  }
}

void BinaryLogger::terminate() {
  shim::Status sent;
  {
    std::lock_guard lock(mu_);
    if (exited_) return;
    sent = handle_.signal(SIGTERM);
    // NotFound: reaped meanwhile, its exit is on the way. Anything else: kill, as Go does.
    if (!sent.ok() && sent.code() != shim::Code::kNotFound) handle_.signal(SIGKILL).ignore_error();
  }
  if (!sent.ok()) {
    if (sent.code() != shim::Code::kNotFound) {
      logger_.warn("failed to send SIGTERM signal, killing logging shim",
                   {{"error", sent.message()}});
    }
    return;
  }
  timer_ = std::make_shared<boost::asio::steady_timer>(executor_, settings_.stop_grace);
  timer_->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec) return;
    {
      std::lock_guard lock(self->mu_);
      if (self->exited_) return;
      self->handle_.signal(SIGKILL)
          .ignore_error();  // a logger gone already has its exit on the way
    }
    self->logger_.warn("failed to wait for shim logger process to exit, killing",
                       {{"pid", std::to_string(self->pid())}});
  });
}

void BinaryLogger::kill_now() {
  std::lock_guard lock(mu_);
  stop_requested_ = true;                                // a later stop() only waits for the exit
  if (!exited_) handle_.signal(SIGKILL).ignore_error();  // gone already: its exit is on the way
}

}  // namespace shim
