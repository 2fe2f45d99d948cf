// What a live upgrade carries of a binary:// logger (docs/live-upgrade.md, "Carrying
// stdio"): the pipe ends the shim still holds and, once the logger runs, its pid and pidfd.
// The exec keeps the logger this process's child; the new program claims its exit from the
// reaper before the reaper starts (Reaper::claim_running), so an exit during the swap is
// not lost either. Starting and stopping are short and hold a pool thread or a timer:
// they refuse the upgrade, which is tried again.
#include <array>

#include <fmt/format.h>

#include "shim/process/reaper.h"
#include "stdio/binary_logger.h"
#include "upgrade/carried_fds.h"
#include "upgrade/state_fields.h"
#include "upgrade/upgrade_support.h"

namespace shim {

namespace json = boost::json;

namespace {

constexpr std::array<const char*, 6> kPipeKeys = {"stdout_read",  "stdout_write", "stderr_read",
                                                  "stderr_write", "ready_read",   "ready_write"};

}  // namespace

shim::Status BinaryLogger::upgrade_ready() const {
  std::lock_guard lock(mu_);
  return upgrade_ready_locked();
}

// Unavailable: the quiesce asks again until its deadline.
shim::Status BinaryLogger::upgrade_ready_locked() const {
  if (starting_) {  // from kStarting until start() returns, readiness wait included
    return Status(Code::kUnavailable, "its binary:// logger is starting");
  }
  if (phase_ == Phase::kRunning && stop_requested_) {
    return Status(Code::kUnavailable, "its binary:// logger is stopping");
  }
  // Reaped, and on_exit() posted but not run: the new program could not claim it.
  if (phase_ == Phase::kRunning && exit_future_.ready()) {
    return Status(Code::kUnavailable, "its binary:// logger's exit is being handled");
  }
  return {};
}

shim::Status BinaryLogger::save_for_upgrade(json::object* state, std::vector<int>* fds) const {
  std::lock_guard lock(mu_);  // start() runs on a pool thread
  if (Status s = upgrade_ready_locked(); !s.ok()) return s;
  const std::array<const stdio::Fd*, 6> pipes = {&stdout_pipe_.read_end, &stdout_pipe_.write_end,
                                                 &stderr_pipe_.read_end, &stderr_pipe_.write_end,
                                                 &ready_pipe_.read_end,  &ready_pipe_.write_end};
  json::object saved;
  saved["phase"] = phase_ == Phase::kIdle ? "idle" : phase_ == Phase::kRunning ? "running" : "done";
  for (std::size_t i = 0; i < pipes.size(); ++i) {
    const int fd = pipes[i]->get();
    saved[kPipeKeys[i]] = fd;
    if (fd >= 0) fds->push_back(fd);
  }
  const int pidfd = phase_ == Phase::kRunning ? handle_.pidfd() : -1;
  if (pidfd >= 0) fds->push_back(pidfd);
  saved["pid"] = pid_;
  saved["pidfd"] = pidfd;
  saved["exit"] = exit_ ? json::value(upgrade::saved_exit(*exit_)) : json::value(nullptr);
  *state = std::move(saved);
  return {};
}

shim::Status BinaryLogger::restore(boost::asio::any_io_executor executor, const StdioUri& uri,
                                   BinaryLoggerSettings settings, const shim::Logger& logger,
                                   const json::value& saved, upgrade::CarriedFds* carried,
                                   std::shared_ptr<BinaryLogger>* out) {
  if (!settings.usable()) {
    return failed_precondition(fmt::format("{}:// logger: no reaper or spawner", uri.scheme));
  }
  upgrade::StateFields fields(saved, "stdio.binary_logger");
  const std::string phase = fields.text("phase");
  std::array<int, 6> pipe_fds{};
  for (std::size_t i = 0; i < pipe_fds.size(); ++i) pipe_fds[i] = fields.fd(kPipeKeys[i]);
  const auto pid = static_cast<pid_t>(fields.number("pid"));
  const int pidfd = fields.fd("pidfd");
  if (phase != "idle" && phase != "running" && phase != "done")
    fields.fail("phase", "idle, running or done");
  if (phase == "running" && pid <= 0) fields.fail("pid", "a pid");
  if (!fields.status().ok()) return fields.status();
  std::optional<ProcessExit> exit;
  if (const json::value* ended = saved.as_object().if_contains("exit");
      ended != nullptr && !ended->is_null()) {
    upgrade::StateFields exit_fields(*ended, "stdio.binary_logger.exit");
    exit = upgrade::restored_exit(exit_fields);
    if (!exit_fields.status().ok()) return exit_fields.status();
  }

  std::shared_ptr<BinaryLogger> self(new BinaryLogger(std::move(executor), std::move(settings),
                                                      logger, uri.scheme == "binary-v2"));
  self->set_program(uri);
  const std::array<stdio::Fd*, 6> pipes = {
      &self->stdout_pipe_.read_end,  &self->stdout_pipe_.write_end, &self->stderr_pipe_.read_end,
      &self->stderr_pipe_.write_end, &self->ready_pipe_.read_end,   &self->ready_pipe_.write_end};
  for (std::size_t i = 0; i < pipes.size(); ++i) {
    if (Status s = carried->take(pipe_fds[i], kPipeKeys[i], pipes[i]); !s.ok()) return s;
  }
  self->exit_ = exit;
  if (phase == "idle") {
    self->phase_ = Phase::kIdle;
  } else if (phase == "done") {
    self->phase_ = Phase::kDone;
    self->exited_ = true;
    self->pid_ = pid;
  } else {
    stdio::Fd handle_fd;
    if (Status s = carried->take(pidfd, "logger pidfd", &handle_fd); !s.ok()) return s;
    self->handle_ = ProcessHandle(pid, handle_fd.release());
    if (Status s = upgrade::check_unreaped_child(pid, "binary:// logger"); !s.ok()) return s;
    if (Status s = self->settings_.reaper->claim_running(pid, &self->exit_future_); !s.ok()) {
      return Status(s.code(), fmt::format("binary:// logger pid {}: {}", pid, s.message()));
    }
    self->phase_ = Phase::kRunning;
    self->pid_ = pid;
    self->watch_exit();
  }
  *out = std::move(self);
  return {};
}

}  // namespace shim
