#include "shim-runc/runc_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "shim-runc/go_compat.h"

extern char** environ;

namespace runc_shim {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kExitPollInterval{20};  // kernels without pidfds

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

bool make_pipe(Fd* read_end, Fd* write_end, std::string* error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) {
    *error = fmt::format("pipe: {}", go_errno_text(errno));
    return false;
  }
  *read_end = Fd(fds[0]);
  *write_end = Fd(fds[1]);
  return true;
}

// A pipe already holding all of `input`, write end closed: nothing to pump later, and no
// SIGPIPE possible since we hold the read end until the child has it.
bool make_input_pipe(const std::string& input, Fd* read_end, std::string* error) {
  Fd write_end;
  if (!make_pipe(read_end, &write_end, error)) return false;
  int capacity = ::fcntl(write_end.get(), F_GETPIPE_SZ);
  if (capacity >= 0 && static_cast<std::size_t>(capacity) < input.size())
    capacity = ::fcntl(write_end.get(), F_SETPIPE_SZ, static_cast<int>(input.size()));
  if (capacity < 0 || static_cast<std::size_t>(capacity) < input.size()) {
    *error = fmt::format("stdin input of {} bytes does not fit a pipe", input.size());
    return false;
  }
  std::string_view rest = input;
  while (!rest.empty()) {
    ssize_t n = ::write(write_end.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = fmt::format("write stdin: {}", go_errno_text(errno));
      return false;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

struct Capture {
  Fd fd;
  std::string* sink = nullptr;
  bool* truncated = nullptr;
  std::size_t limit = 0;

  // Reads what is there; closes the fd at EOF or on error.
  void drain() {
    std::array<char, 16384> buffer;
    while (fd.open()) {
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

// Reads the pipes until the child has exited (pidfd readable, or the exit known), killing
// it at the deadline. Output still in the pipes after the exit is drained by the caller;
// a grandchild holding a pipe open does not keep us here.
void pump_until_exit(shim::ClaimedProcess& process, Capture& out, Capture& err,
                     std::optional<SteadyClock::time_point> deadline) {
  for (;;) {
    if (!process.handle.has_pidfd() && process.exit.ready()) return;
    std::vector<pollfd> fds;
    if (out.fd.open()) fds.push_back({out.fd.get(), POLLIN, 0});
    if (err.fd.open()) fds.push_back({err.fd.get(), POLLIN, 0});
    if (process.handle.has_pidfd()) fds.push_back({process.handle.pidfd(), POLLIN, 0});
    int timeout_ms = process.handle.has_pidfd() ? -1 : static_cast<int>(kExitPollInterval.count());
    if (deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - SteadyClock::now());
      if (left.count() <= 0) {
        process.handle.signal(SIGKILL);
        deadline.reset();
        continue;
      }
      int left_ms = static_cast<int>(left.count());
      timeout_ms = timeout_ms < 0 ? left_ms : std::min(timeout_ms, left_ms);
    }
    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      process.exit.wait();  // cannot poll: the exit will still come
      return;
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == process.handle.pidfd()) return;
      if (p.fd == out.fd.get()) out.drain();
      if (p.fd == err.fd.get()) err.drain();
    }
  }
}

bool executable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return false;
  return (st.st_mode & 0111) != 0;
}

// fds for the child and the pipes we read, per capture mode.
struct ChildIo {
  std::vector<std::pair<int, int>> fds;
  Fd input;
  Fd out_write;
  Fd err_write;
};

bool prepare_io(const CommandRequest& request, CommandResult* result, Capture* out,
                Capture* err, ChildIo* io) {
  std::string* error = &result->error;
  if (!request.input.empty()) {
    if (!make_input_pipe(request.input, &io->input, error)) return false;
    io->fds.emplace_back(0, io->input.get());
  } else if (request.capture == OutputCapture::kNone && request.stdio.in >= 0) {
    io->fds.emplace_back(0, request.stdio.in);
  }
  switch (request.capture) {
    case OutputCapture::kNone:
      if (request.stdio.out >= 0) io->fds.emplace_back(1, request.stdio.out);
      if (request.stdio.err >= 0) io->fds.emplace_back(2, request.stdio.err);
      return true;
    case OutputCapture::kCombined:
    case OutputCapture::kStdout:
      if (!make_pipe(&out->fd, &io->out_write, error)) return false;
      io->fds.emplace_back(1, io->out_write.get());
      if (request.capture == OutputCapture::kCombined) io->fds.emplace_back(2, io->out_write.get());
      return true;
    case OutputCapture::kSeparate:
      if (!make_pipe(&out->fd, &io->out_write, error)) return false;
      if (!make_pipe(&err->fd, &io->err_write, error)) return false;
      io->fds.emplace_back(1, io->out_write.get());
      io->fds.emplace_back(2, io->err_write.get());
      return true;
  }
  return true;
}

}  // namespace

bool look_path(const std::string& name, std::string* path, std::string* error) {
  if (name.find('/') != std::string::npos) {
    *path = name;
    return true;
  }
  const char* env_path = std::getenv("PATH");
  std::string_view dirs = env_path == nullptr ? "" : env_path;
  // Go's filepath.SplitList: "" has no entries; an empty entry means ".".
  for (std::size_t pos = 0; !dirs.empty() && pos <= dirs.size();) {
    std::size_t colon = std::min(dirs.find(':', pos), dirs.size());
    std::string_view dir = dirs.substr(pos, colon - pos);
    std::string candidate = go_join_path(dir.empty() ? "." : dir, name);
    if (executable_file(candidate)) {
      if (candidate.front() != '/') {  // Go 1.19+ refuses these (exec.ErrDot)
        *error = fmt::format(
            "exec: \"{}\": cannot run executable found relative to current directory", name);
        return false;
      }
      *path = candidate;
      return true;
    }
    pos = colon + 1;
  }
  *error = fmt::format("exec: \"{}\": executable file not found in $PATH", name);
  return false;
}

std::vector<std::string> runtime_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable = *entry;
    if (variable.starts_with("NOTIFY_SOCKET=")) continue;
    env.emplace_back(variable);
  }
  return env;
}

CommandResult run_runtime_command(shim::Reaper& reaper, shim::Spawner& spawner,
                                  const CommandRequest& request) {
  CommandResult result;
  if (request.argv.empty()) {
    result.error = "exec: no command";
    return result;
  }
  const std::string& name = request.argv.front();
  std::string path;
  if (!look_path(name, &path, &result.error)) return result;
  if (name.find('/') != std::string::npos && ::access(path.c_str(), X_OK) != 0) {
    result.error = fmt::format("fork/exec {}: {}", path, go_errno_text(errno));
    return result;
  }

  Capture out{Fd(), &result.output, &result.truncated, request.max_output};
  Capture err{Fd(), &result.error_output, &result.truncated, request.max_output};
  ChildIo io;
  if (!prepare_io(request, &result, &out, &err, &io)) return result;

  shim::SpawnRequest spawn{.path = path,
                           .argv = request.argv,
                           .env = runtime_environment(),
                           .fds = io.fds,
                           .parent_death_signal = SIGKILL};
  shim::ClaimedProcess process;
  shim::Status spawned = reaper.spawn_claimed(spawner, spawn, &process);
  // Our copies of the child's ends must go, or the pipes never reach EOF.
  io = ChildIo{};
  if (!spawned.ok()) {
    result.error = spawned.message();
    return result;
  }
  result.started = true;

  for (int fd : {out.fd.get(), err.fd.get()}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  std::optional<SteadyClock::time_point> deadline;
  if (request.timeout) deadline = SteadyClock::now() + *request.timeout;
  pump_until_exit(process, out, err, deadline);
  out.drain();
  err.drain();

  std::optional<shim::ProcessExit> exit = process.exit.wait();
  if (!exit) {
    result.error = fmt::format("wait for {}: reaper stopped", name);
    return result;
  }
  result.exit = *exit;
  if (exit->status != 0) {
    result.error = fmt::format("{} did not terminate successfully: {}", name,
                               go_exit_status_text(exit->status));
  }
  return result;
}

}  // namespace runc_shim
