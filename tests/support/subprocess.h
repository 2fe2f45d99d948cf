// Test-only process helpers (fork+exec): run a command to completion with a timeout, or
// keep one running in the background (containerd, `ctr events`).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace shim::test {

struct CommandResult {
  // Exit code, or 128 + signal number when killed by a signal, -1 if it never ran.
  int exit_code = -1;
  std::string out;
  std::string err;
  bool timed_out = false;

  bool ok() const { return exit_code == 0 && !timed_out; }
  // "exit 1 (timed out); stdout: ...; stderr: ..." for assertion messages.
  std::string describe() const;
};

struct CommandOptions {
  std::chrono::milliseconds timeout{30000};
  std::string stdin_data;               // empty: stdin is /dev/null
  std::vector<std::string> env;         // "K=V" entries added to (or replacing in) ours
  std::string cwd;                      // empty: ours
};

// Runs argv[0] (looked up in PATH when it has no '/') in its own process group and
// collects its output. On timeout the whole group is SIGKILLed. Returns once the process
// has exited and the output it wrote is read, even if a grandchild still holds the pipes.
CommandResult run_command(const std::vector<std::string>& argv,
                          const CommandOptions& options = {});

// How a background child's stdio is wired.
struct SpawnOptions {
  std::string stdout_path;  // appended to; empty and !pipe_stdout: /dev/null
  std::string stderr_path;  // appended to; empty: same as stdout (or /dev/null)
  bool pipe_stdout = false; // stdout to a pipe readable through stdout_fd()
  std::vector<std::string> env;
  std::string cwd;
};

// A child in its own process group. The destructor kills (SIGKILL) and reaps it if it is
// still running.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const std::vector<std::string>& argv, const SpawnOptions& options);
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool valid() const { return pid_ > 0; }
  int stdout_fd() const { return stdout_fd_; }  // -1 unless pipe_stdout

  // Reaps without blocking; false once it has exited.
  bool running();
  // Exit status (as CommandResult::exit_code) once exited; nullopt on timeout.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  void signal(int sig) const;
  // SIGTERM, up to `grace` to exit, then SIGKILL. Returns the exit status.
  int terminate(std::chrono::milliseconds grace);
  // SIGKILL and reap.
  int kill();
  std::optional<int> exit_status() const { return status_; }

 private:
  void reset();

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::optional<int> status_;
};

// Converts a waitpid status to an exit code (128 + signal when signalled).
int exit_code_from_wait_status(int status);

}  // namespace shim::test
