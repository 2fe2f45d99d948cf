// Runs a test scenario in a forked child process.
//
// The reaper changes process-wide state (child subreaper, SIGCHLD blocked for signalfd,
// waitpid(-1) on every child) that must not leak into the other tests of the shared
// unit_tests binary. The child is forked before the scenario starts any thread, runs it,
// and reports through a pipe: one line per failed check, then the number of checks.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

namespace shim_test {

class ChildReport {
 public:
  explicit ChildReport(int fd) : fd_(fd) {}

  // Records a check; a failing one is reported with `what`.
  bool check(bool ok, const std::string& what) {
    ++checks_;
    if (!ok) send("F " + what);
    return ok;
  }
  void note(const std::string& what) { send("I " + what); }
  void finish() { send("N " + std::to_string(checks_)); }

 private:
  void send(std::string line) {
    for (char& c : line) {
      if (c == '\n') c = ' ';
    }
    line += '\n';
    std::string_view rest = line;
    while (!rest.empty()) {
      ssize_t n = ::write(fd_, rest.data(), rest.size());
      if (n <= 0) return;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  int fd_;
  int checks_ = 0;
};

struct ChildOutcome {
  int wait_status = 0;
  bool timed_out = false;
  bool finished = false;
  int checks = 0;
  std::vector<std::string> failures;
  std::vector<std::string> notes;
};

inline ChildOutcome run_in_child(const std::function<void(ChildReport&)>& scenario,
                                 std::chrono::seconds limit = std::chrono::seconds(90)) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    // Catch2's fatal-signal handlers would make every process the scenario forks print a
    // test report when it is killed; the scenario wants plain default actions.
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGABRT, SIGPIPE})
      ::signal(sig, SIG_DFL);
    ChildReport report(fds[1]);
    try {
      scenario(report);
    } catch (const std::exception& e) {
      report.check(false, std::string("exception: ") + e.what());
    } catch (...) {
      report.check(false, "unknown exception");
    }
    report.finish();
    ::_exit(0);  // no atexit handlers, no Catch2 teardown in the child
  }
  ::close(fds[1]);

  ChildOutcome outcome;
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      outcome.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd readable{fds[0], POLLIN, 0};
    if (::poll(&readable, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    // The last line is the check count; stop there even if a process the scenario left
    // behind still holds the pipe.
    if (text.ends_with("\n") && text.find("\nN ") != std::string::npos) break;
    if (text.rfind("N ", 0) == 0 && text.ends_with("\n")) break;
  }
  ::close(fds[0]);
  while (::waitpid(pid, &outcome.wait_status, 0) < 0 && errno == EINTR) {
  }

  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("F ", 0) == 0) outcome.failures.push_back(line.substr(2));
    if (line.rfind("I ", 0) == 0) outcome.notes.push_back(line.substr(2));
    if (line.rfind("N ", 0) == 0) {
      outcome.finished = true;
      outcome.checks = std::stoi(line.substr(2));
    }
  }
  return outcome;
}

// The scenario ran to its end in the child, made checks, and none failed.
inline void require_child_passed(const ChildOutcome& outcome) {
  for (const auto& note : outcome.notes) UNSCOPED_INFO(note);
  for (const auto& failure : outcome.failures) FAIL_CHECK(failure);
  CHECK_FALSE(outcome.timed_out);
  CHECK(WIFEXITED(outcome.wait_status));
  CHECK(WEXITSTATUS(outcome.wait_status) == 0);
  CHECK(outcome.finished);
  CHECK(outcome.checks > 0);
  CHECK(outcome.failures.empty());
}

}  // namespace shim_test
