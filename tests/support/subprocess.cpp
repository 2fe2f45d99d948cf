// Boost 1.81's header-only mode of Boost.Process v2 leaves impl/environment.ipp out of
// environment.hpp, so its sources are compiled here, in the one file that uses it.
#define BOOST_PROCESS_V2_SEPARATE_COMPILATION 1

#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

#include <type_traits>

#include <boost/asio/io_context.hpp>
// Boost 1.81: Boost.Process v2 with std::filesystem still names boost::optional and
// Boost.TypeTraits without including them (the Boost.Filesystem path brings them in).
#include <boost/optional.hpp>
#include <boost/type_traits.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/start_dir.hpp>
#include <boost/process/v2/stdio.hpp>
#include <boost/process/v2/src.hpp>
#include <fmt/format.h>

#include "shim/unique_fd.h"

extern char** environ;

namespace shim::test {
namespace {

using Clock = std::chrono::steady_clock;
namespace bp = boost::process::v2;

using Fd = shim::UniqueFd;

std::runtime_error sys_error(std::string_view what) {
  return std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

std::pair<Fd, Fd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw sys_error("pipe2");
  return {Fd(fds[0]), Fd(fds[1])};
}

Fd open_file(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) throw sys_error(fmt::format("open {}", path));
  return Fd(fd);
}

std::string env_value(const std::vector<std::string>& env, std::string_view key) {
  for (const auto& entry : env) {
    if (entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 &&
        entry[key.size()] == '=') {
      return entry.substr(key.size() + 1);
    }
  }
  return {};
}

// Our environment with `overrides` ("K=V") replacing or adding entries.
std::vector<std::string> merged_env(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& o : overrides) replaced |= o.compare(0, key.size() + 1, fmt::format("{}=", key)) == 0;
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

std::string resolve_executable(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = env_value(env, "PATH");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw std::runtime_error(fmt::format("{}: not found in PATH", name));
}

struct SpawnPlan {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // complete environment
  std::string cwd;
  int in = -1, out = -1, err = -1;
};

// Run in the child between fork and exec (Boost.Process calls it there): own process
// group, so a timeout can kill the whole tree; signal state reset, since masks and
// ignored signals survive exec. Async-signal-safe calls only.
struct OwnProcessGroup {
  template <class Launcher>
  boost::system::error_code on_exec_setup(Launcher&, const bp::filesystem::path&, const char* const*) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    return {};
  }
};

// Starts the plan's process and leaves it running; the caller reaps it by pid (tests
// that reap children themselves must not race an asynchronous waiter). Boost.Process's
// launcher closes every other fd in the child and reports a failed exec.
pid_t spawn(const SpawnPlan& plan) {
  if (plan.argv.empty()) throw std::runtime_error("spawn: empty argv");
  std::string path = resolve_executable(plan.argv[0], plan.env);
  std::vector<std::string> args(plan.argv.begin() + 1, plan.argv.end());
  boost::asio::io_context context;
  boost::system::error_code error;
  bp::process process(context.get_executor(), bp::filesystem::path(path), args, error,
                      bp::process_stdio{plan.in, plan.out, plan.err}, bp::process_environment(plan.env),
                      bp::process_start_dir(plan.cwd.empty() ? bp::filesystem::current_path() : bp::filesystem::path(plan.cwd)),
                      OwnProcessGroup{});
  if (error) throw std::runtime_error(fmt::format("exec {}: {}", path, error.message()));
  pid_t pid = process.id();
  process.detach();
  return pid;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads what is available; false at EOF (or error).
bool drain(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// Waits for `pid` without blocking; the status once it has exited.
std::optional<int> try_reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) return exit_code_from_wait_status(status);
  if (r < 0) return -1;  // someone else reaped it (ECHILD): gone, status unknown
  return std::nullopt;
}

}  // namespace

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string CommandResult::describe() const {
  return fmt::format("exit {}{}; stdout: [{}]; stderr: [{}]", exit_code,
                     timed_out ? " (timed out)" : "", out, err);
}

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  Fd in_read, in_write;
  if (options.stdin_data.empty()) {
    in_read = open_file("/dev/null", O_RDONLY);
  } else {
    std::tie(in_read, in_write) = make_pipe();
  }
  SpawnPlan plan{argv, merged_env(options.env), options.cwd, in_read.get(), out_write.get(),
                 err_write.get()};
  pid_t pid = spawn(plan);
  in_read.reset();
  out_write.reset();
  err_write.reset();
  set_nonblocking(out_read.get());
  set_nonblocking(err_read.get());
  if (in_write.get() >= 0) set_nonblocking(in_write.get());

  CommandResult result;
  std::size_t written = 0;
  const auto deadline = Clock::now() + options.timeout;
  bool out_open = true, err_open = true;
  for (;;) {
    std::vector<pollfd> fds;
    if (out_open) fds.push_back({out_read.get(), POLLIN, 0});
    if (err_open) fds.push_back({err_read.get(), POLLIN, 0});
    if (in_write.get() >= 0) fds.push_back({in_write.get(), POLLOUT, 0});
    ::poll(fds.data(), fds.size(), 20);
    if (out_open) out_open = drain(out_read.get(), result.out);
    if (err_open) err_open = drain(err_read.get(), result.err);
    if (in_write.get() >= 0) {
      ssize_t n = ::write(in_write.get(), options.stdin_data.data() + written,
                          options.stdin_data.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == options.stdin_data.size()) {
        in_write.reset();
      }
    }
    if (auto status = try_reap(pid)) {
      result.exit_code = *status;
      break;
    }
    if (Clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      result.exit_code = exit_code_from_wait_status(status);
      result.timed_out = true;
      break;
    }
  }
  // Everything the process wrote before exiting is in the pipes now.
  drain(out_read.get(), result.out);
  drain(err_read.get(), result.err);
  return result;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options) {
  Fd in = open_file("/dev/null", O_RDONLY);
  Fd out, out_read;
  if (options.pipe_stdout) {
    std::tie(out_read, out) = make_pipe();
  } else if (!options.stdout_path.empty()) {
    out = open_file(options.stdout_path, O_WRONLY | O_CREAT | O_APPEND);
  } else {
    out = open_file("/dev/null", O_WRONLY);
  }
  Fd err;
  if (!options.stderr_path.empty()) {
    err = open_file(options.stderr_path, O_WRONLY | O_CREAT | O_APPEND);
  } else if (!options.stdout_path.empty() && !options.pipe_stdout) {
    err = Fd(::fcntl(out.get(), F_DUPFD_CLOEXEC, 3));
  } else {
    err = open_file("/dev/null", O_WRONLY);
  }
  SpawnPlan plan{argv, merged_env(options.env), options.cwd, in.get(), out.get(), err.get()};
  pid_ = spawn(plan);
  stdout_fd_ = out_read.release();
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) kill();
  reset();
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      status_(std::exchange(other.status_, std::nullopt)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !status_) kill();
    reset();
    pid_ = std::exchange(other.pid_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

void ChildProcess::reset() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
  pid_ = -1;
  status_.reset();
}

bool ChildProcess::running() {
  if (pid_ <= 0 || status_) return false;
  status_ = try_reap(pid_);
  return !status_;
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

int ChildProcess::terminate(std::chrono::milliseconds grace) {
  signal(SIGTERM);
  if (auto status = wait_for(grace)) return *status;
  return kill();
}

int ChildProcess::kill() {
  if (pid_ <= 0) return -1;
  if (status_) return *status_;
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? exit_code_from_wait_status(status) : -1;
  return *status_;
}

}  // namespace shim::test
