#include "shim/process/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "shim/process/call_deadline.h"

#include "shim/unique_fd.h"

namespace shim {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kExitPollInterval{20};  // without a pidfd

Status make_pipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return unknown(fmt::format("pipe: {}", std::strerror(errno)));
  *read_end = UniqueFd(fds[0]);
  *write_end = UniqueFd(fds[1]);
  return {};
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// write(2) that turns a closed reader into EPIPE without a SIGPIPE killing the shim
// (the calling thread may not have it blocked or ignored).
ssize_t write_without_sigpipe(int fd, std::string_view data) {
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t saved;
  pthread_sigmask(SIG_BLOCK, &pipe_only, &saved);
  sigset_t pending_before;
  sigpending(&pending_before);
  ssize_t n = ::write(fd, data.data(), data.size());
  int err = errno;
  if (n < 0 && err == EPIPE && !sigismember(&pending_before, SIGPIPE)) {
    struct timespec no_wait{};
    sigtimedwait(&pipe_only, nullptr, &no_wait);  // consume the SIGPIPE we caused
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  errno = err;
  return n;
}

struct OutputStream {
  UniqueFd fd;
  std::string* sink = nullptr;
  bool* truncated = nullptr;
  std::size_t limit = 0;

  // Reads what is available; closes the fd at EOF or on error.
  void drain() {
    std::array<char, 16384> buffer;
    while (fd.valid()) {
      ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        fd.reset();
        return;
      }
      std::size_t room = limit - std::min(limit, sink->size());
      std::size_t take = std::min(room, static_cast<std::size_t>(n));
      sink->append(buffer.data(), take);
      if (take < static_cast<std::size_t>(n)) *truncated = true;
    }
  }
};

struct InputStream {
  UniqueFd fd;
  std::string_view pending;

  void pump() {
    while (fd.valid() && !pending.empty()) {
      ssize_t n = write_without_sigpipe(fd.get(), pending);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n < 0) break;  // EPIPE: the child does not read its input
      pending.remove_prefix(static_cast<std::size_t>(n));
    }
    fd.reset();
  }
};

// Polls the pipes until the child exits (its pidfd turns readable, or the exit arrives)
// or the deadline passes. Returns false on timeout.
bool pump_until_exit(ClaimedProcess& process, OutputStream& out, OutputStream& err,
                     InputStream& in, std::optional<Clock::time_point> deadline) {
  for (;;) {
    if (!process.handle.has_pidfd() && process.exit.ready()) return true;
    std::vector<pollfd> fds;
    if (out.fd.valid()) fds.push_back({out.fd.get(), POLLIN, 0});
    if (err.fd.valid()) fds.push_back({err.fd.get(), POLLIN, 0});
    if (in.fd.valid()) fds.push_back({in.fd.get(), POLLOUT, 0});
    if (process.handle.has_pidfd()) fds.push_back({process.handle.pidfd(), POLLIN, 0});
    int timeout_ms = -1;
    if (!process.handle.has_pidfd()) timeout_ms = static_cast<int>(kExitPollInterval.count());
    if (deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) return false;
      timeout_ms = timeout_ms < 0 ? static_cast<int>(left.count())
                                  : std::min(timeout_ms, static_cast<int>(left.count()));
    }
    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) return true;  // cannot poll: just wait for the exit
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == process.handle.pidfd()) return true;  // exited
      if (p.fd == in.fd.get()) in.pump();
      if (p.fd == out.fd.get()) out.drain();
      if (p.fd == err.fd.get()) err.drain();
    }
  }
}

// The child's ends of the pipes run_and_capture reads and writes.
struct ChildEnds {
  UniqueFd in;
  UniqueFd out;
  UniqueFd err;
};

Status open_pipes(const CaptureOptions& options, InputStream* in, OutputStream* out,
                  OutputStream* err, ChildEnds* child) {
  if (options.out == OutputRoute::kSameAsStdout)
    return invalid_argument("run_and_capture: stdout routed to itself");
  if (options.out == OutputRoute::kCapture) {
    if (Status s = make_pipe(&out->fd, &child->out); !s.ok()) return s;
  }
  if (options.err == OutputRoute::kCapture) {
    if (Status s = make_pipe(&err->fd, &child->err); !s.ok()) return s;
  }
  if (!options.input.empty()) {
    if (Status s = make_pipe(&child->in, &in->fd); !s.ok()) return s;
  }
  return {};
}

int requested_fd(const SpawnRequest& request, int child_fd) {
  for (const auto& [child, parent] : request.fds) {
    if (child == child_fd) return parent;
  }
  return -1;
}

SpawnRequest with_stdio(const SpawnRequest& request, const CaptureOptions& options,
                        const ChildEnds& child) {
  int in = child.in.valid() ? child.in.get() : requested_fd(request, 0);
  int out = child.out.valid() ? child.out.get() : requested_fd(request, 1);
  int err = child.err.valid() ? child.err.get() : requested_fd(request, 2);
  if (options.err == OutputRoute::kSameAsStdout) err = out;
  SpawnRequest routed = request;
  std::erase_if(routed.fds, [](const auto& map) { return map.first <= 2; });
  for (auto [child_fd, parent_fd] : {std::pair{0, in}, std::pair{1, out}, std::pair{2, err}}) {
    if (parent_fd >= 0) routed.fds.emplace_back(child_fd, parent_fd);
  }
  return routed;
}

Status wait_exit(const ClaimedProcess& process, const std::string& path, ProcessExit* exit) {
  std::optional<ProcessExit> result = process.exit.wait();
  if (!result) return unavailable(fmt::format("wait for {}: reaper stopped", path));
  *exit = *result;
  return {};
}

}  // namespace

Status spawn_and_wait(Reaper& reaper, Spawner& spawner, const SpawnRequest& request,
                      ProcessExit* exit) {
  ClaimedProcess process;
  if (Status status = reaper.spawn_claimed(spawner, request, &process); !status.ok())
    return status;
  return wait_exit(process, request.path, exit);
}

Status run_and_capture(Reaper& reaper, Spawner& spawner, const SpawnRequest& request,
                       const CaptureOptions& options, CaptureResult* result) {
  *result = CaptureResult{};
  OutputStream out{UniqueFd(), &result->out, &result->out_truncated, options.max_output};
  OutputStream err{UniqueFd(), &result->err, &result->err_truncated, options.max_output};
  InputStream in{UniqueFd(), options.input};
  ChildEnds child;
  if (Status s = open_pipes(options, &in, &out, &err, &child); !s.ok()) return s;

  ClaimedProcess process;
  Status spawned =
      reaper.spawn_claimed(spawner, with_stdio(request, options, child), &process);
  // Our copies of the child's ends must go, or we would never see EOF.
  child = ChildEnds{};
  if (!spawned.ok()) return spawned;
  result->started = true;

  for (int fd : {out.fd.get(), err.fd.get(), in.fd.get()}) {
    if (fd >= 0) set_nonblocking(fd);
  }
  std::optional<Clock::time_point> deadline;
  if (options.timeout) deadline = Clock::now() + *options.timeout;
  // The task API call's deadline bounds the command too (go-runc's CommandContext).
  CallDeadline call_deadline = current_call_deadline();
  bool by_call = call_deadline && (!deadline || *call_deadline < *deadline);
  if (by_call) deadline = *call_deadline;
  bool exited = pump_until_exit(process, out, err, in, deadline);
  // Already gone is fine: the wait below reports how it ended.
  if (!exited) process.handle.signal(SIGKILL).ignore_error();
  Status waited = wait_exit(process, request.path, &result->exit);
  // What the child wrote before it died is still in the pipes; anything a surviving
  // grandchild writes later is not ours to wait for.
  out.drain();
  err.drain();
  if (!waited.ok()) return waited;
  if (!exited && by_call) {
    return Status(Code::kDeadlineExceeded,
                  fmt::format("{}: killed at the call's deadline: context deadline exceeded", request.path));
  }
  if (!exited) {
    return Status(Code::kDeadlineExceeded,
                  fmt::format("{}: timed out after {} ms", request.path, options.timeout->count()));
  }
  return {};
}

}  // namespace shim
