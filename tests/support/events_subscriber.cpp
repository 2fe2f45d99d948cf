#include "support/events_subscriber.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shim::test {

EventsSubscriber::EventsSubscriber(const std::vector<std::string>& argv,
                                   const std::string& stderr_path) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  wake_read_ = fds[0];
  wake_write_ = fds[1];
  SpawnOptions options;
  options.pipe_stdout = true;
  options.stderr_path = stderr_path;
  child_ = ChildProcess(argv, options);
  reader_ = std::thread([this] { read_loop(); });
}

EventsSubscriber::~EventsSubscriber() {
  stop();
  ::close(wake_read_);
  ::close(wake_write_);
}

void EventsSubscriber::stop() {
  if (reader_.joinable()) {
    char byte = 1;
    [[maybe_unused]] auto n = ::write(wake_write_, &byte, 1);
    reader_.join();
  }
  child_.kill();
}

bool EventsSubscriber::running() { return child_.running(); }

void EventsSubscriber::read_loop() {
  std::string partial;
  char buf[8192];
  for (;;) {
    pollfd fds[2] = {{child_.stdout_fd(), POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    if (fds[0].revents == 0) continue;
    ssize_t n = ::read(child_.stdout_fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<std::size_t>(n));
    std::lock_guard lock(mutex_);
    for (std::size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      lines_.push_back(partial.substr(0, nl));
      partial.erase(0, nl + 1);
    }
    changed_.notify_all();
  }
  std::lock_guard lock(mutex_);
  if (!partial.empty()) lines_.push_back(partial);
  eof_ = true;
  changed_.notify_all();
}

std::optional<std::string> EventsSubscriber::wait_for(
    const std::function<bool(const std::string&)>& predicate,
    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  std::size_t checked = 0;
  for (;;) {
    for (; checked < lines_.size(); ++checked) {
      if (predicate(lines_[checked])) return lines_[checked];
    }
    if (eof_) return std::nullopt;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        checked == lines_.size()) {
      return std::nullopt;
    }
  }
}

std::optional<std::string> EventsSubscriber::wait_for_line(
    const std::vector<std::string>& parts, std::chrono::milliseconds timeout) {
  return wait_for(
      [&parts](const std::string& line) {
        for (const auto& part : parts) {
          if (line.find(part) == std::string::npos) return false;
        }
        return true;
      },
      timeout);
}

std::vector<std::string> EventsSubscriber::lines() const {
  std::lock_guard lock(mutex_);
  return lines_;
}

std::string EventsSubscriber::text() const {
  std::lock_guard lock(mutex_);
  return fmt::format("{}", fmt::join(lines_, "\n"));
}

}  // namespace shim::test
