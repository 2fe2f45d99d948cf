// PosixSpawner and ProcessHandle. These run in the test process itself: the spawner
// changes no process-wide state, and the tests reap their own children by pid.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/process/process_handle.h"

namespace {

using shim::PosixSpawner;
using shim::ProcessHandle;
using shim::SpawnedProcess;
using shim::SpawnRequest;
using shim::Status;

class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) { REQUIRE(fd_ >= 0); }
  ~OwnedFd() { ::close(fd_); }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

int wait_for(pid_t pid) {
  int status = 0;
  pid_t got = -1;
  do {
    got = ::waitpid(pid, &status, 0);
  } while (got < 0 && errno == EINTR);
  REQUIRE(got == pid);
  return status;
}

struct Output {
  std::string out;
  int wait_status = 0;
};

// Spawns `request` with stdout on a pipe, reads it to EOF and reaps the child.
Output run(SpawnRequest request) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  OwnedFd read_end(fds[0]);
  SpawnedProcess child;
  {
    OwnedFd write_end(fds[1]);
    request.fds.emplace_back(1, write_end.get());
    PosixSpawner spawner;
    Status status = spawner.spawn(request, &child);
    INFO(status.to_string());
    REQUIRE(status.ok());
    REQUIRE(child.pid > 0);
  }
  Output output;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(read_end.get(), buffer, sizeof(buffer))) > 0) output.out.append(buffer, n);
  output.wait_status = wait_for(child.pid);
  return output;
}

// "fd -> target" from `ls -l /proc/self/fd` output, without ls's own directory fd.
std::map<int, std::string> parse_fd_listing(const std::string& listing) {
  std::map<int, std::string> fds;
  std::istringstream lines(listing);
  std::string line;
  while (std::getline(lines, line)) {
    auto arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    auto space = line.rfind(' ', arrow - 1);
    int fd = std::stoi(line.substr(space + 1, arrow - space - 1));
    std::string target = line.substr(arrow + 4);
    bool own_dir = target.rfind("/proc/", 0) == 0 && target.size() > 3 &&
                   target.compare(target.size() - 3, 3, "/fd") == 0;
    if (!own_dir) fds[fd] = target;
  }
  return fds;
}

// The ids in a /proc/<pid>/stat line (the fields after "(comm) state").
struct ProcIds {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
};

ProcIds proc_ids(const std::string& stat) {
  ProcIds ids;
  ids.pid = std::stoi(stat);
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string state;
  fields >> state >> ids.ppid >> ids.pgrp >> ids.session;
  return ids;
}

}  // namespace

TEST_CASE("spawner applies argv, env and cwd", "[spawner]") {
  char dir_template[] = "/tmp/libshim-spawn-cwd-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;

  SpawnRequest request;
  request.path = "/bin/sh";
  request.argv = {"sh", "-c", R"sh(printf '%s|%s|%s|%s|%s' "$0" "$1" "$FOO" "$(pwd)" "$HOME")sh",
                  "zeroth", "first arg"};
  request.env = std::vector<std::string>{"FOO=bar baz", "PATH=/usr/bin:/bin"};
  request.cwd = dir;
  Output output = run(request);
  CHECK(output.out == "zeroth|first arg|bar baz|" + dir + "|");
  CHECK(WIFEXITED(output.wait_status));
  CHECK(WEXITSTATUS(output.wait_status) == 0);
  ::rmdir(dir.c_str());

  SECTION("no env given: the shim's environment is inherited; PATH lookup") {
    SpawnRequest inherit;
    inherit.path = "printenv";  // no '/': looked up in PATH
    inherit.argv = {"printenv", "PATH"};
    Output inherited = run(inherit);
    const char* path = std::getenv("PATH");
    REQUIRE(path != nullptr);
    CHECK(inherited.out == std::string(path) + "\n");
  }
}

TEST_CASE("spawner maps fds exactly and leaks no other fd", "[spawner]") {
  // A marker for child fd 3, and a deliberately inheritable fd that must not get through.
  OwnedFd marker(::memfd_create("libshim-fd3-marker", MFD_CLOEXEC));
  OwnedFd leak(::memfd_create("libshim-leak-marker", 0));
  // Two sources swapped onto each other's numbers: 50 -> child 51, 51 -> child 50.
  OwnedFd a(::memfd_create("libshim-a", MFD_CLOEXEC));
  OwnedFd b(::memfd_create("libshim-b", MFD_CLOEXEC));
  REQUIRE(::dup3(a.get(), 50, O_CLOEXEC) == 50);
  REQUIRE(::dup3(b.get(), 51, O_CLOEXEC) == 51);

  SpawnRequest request;
  request.path = "/bin/ls";
  request.argv = {"ls", "-l", "/proc/self/fd"};
  request.fds = {{3, marker.get()}, {51, 50}, {50, 51}};
  Output output = run(request);
  ::close(50);
  ::close(51);
  INFO(output.out);
  std::map<int, std::string> fds = parse_fd_listing(output.out);

  std::vector<int> numbers;
  for (const auto& [fd, target] : fds) numbers.push_back(fd);
  CHECK(numbers == std::vector<int>{0, 1, 2, 3, 50, 51});
  CHECK(fds[0] == "/dev/null");
  CHECK(fds[1].rfind("pipe:", 0) == 0);
  CHECK(fds[2] == "/dev/null");
  CHECK(fds[3].find("libshim-fd3-marker") != std::string::npos);
  CHECK(fds[50].find("libshim-b") != std::string::npos);
  CHECK(fds[51].find("libshim-a") != std::string::npos);
  CHECK(output.out.find("libshim-leak-marker") == std::string::npos);
}

TEST_CASE("spawner reports exec and setup failures clearly", "[spawner]") {
  PosixSpawner spawner;
  SpawnedProcess child;

  SECTION("missing binary") {
    SpawnRequest request{.path = "/nonexistent/libshim-prog"};
    Status status = spawner.spawn(request, &child);
    CHECK_FALSE(status.ok());
    CHECK(status.message() == "exec /nonexistent/libshim-prog: No such file or directory");
    // The child that failed to exec was created, and already reaped: no zombie.
    REQUIRE(child.pid > 0);
    CHECK(::waitpid(child.pid, nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
    CHECK_FALSE(child.handle.valid());
  }
  SECTION("not executable") {
    SpawnRequest request{.path = "/etc/passwd"};
    Status status = spawner.spawn(request, &child);
    CHECK(status.message() == "exec /etc/passwd: Permission denied");
  }
  SECTION("not in PATH") {
    SpawnRequest request{.path = "libshim-no-such-command"};
    Status status = spawner.spawn(request, &child);
    CHECK(status.message().rfind("exec libshim-no-such-command: No such file or directory", 0) == 0);
    CHECK(child.pid == -1);  // nothing was started
  }
  SECTION("bad working directory") {
    SpawnRequest request{.path = "/bin/true", .cwd = "/nonexistent-libshim-dir"};
    Status status = spawner.spawn(request, &child);
    CHECK(status.message() ==
          "spawn /bin/true: chdir /nonexistent-libshim-dir: No such file or directory");
  }
  SECTION("bad parent fd") {
    SpawnRequest request{.path = "/bin/true", .fds = {{3, 987}}};
    Status status = spawner.spawn(request, &child);
    CHECK(status.code() == shim::Code::kInvalidArgument);
    CHECK(status.message().find("map fd 987 to child fd 3") != std::string::npos);
    CHECK(child.pid == -1);
  }
}

TEST_CASE("spawned child has an empty signal mask and default dispositions", "[spawner]") {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGUSR2);
  sigset_t saved_mask;
  REQUIRE(pthread_sigmask(SIG_BLOCK, &block, &saved_mask) == 0);
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved_usr1{};
  REQUIRE(::sigaction(SIGUSR1, &ignore, &saved_usr1) == 0);

  SpawnRequest request;
  request.path = "/bin/grep";
  request.argv = {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"};
  Output output = run(request);

  ::sigaction(SIGUSR1, &saved_usr1, nullptr);
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  CHECK(output.out == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST_CASE("spawner sets process group and session", "[spawner]") {
  SpawnRequest request;
  request.path = "/bin/cat";
  request.argv = {"cat", "/proc/self/stat"};

  SECTION("new process group") {
    request.new_process_group = true;
    ProcIds ids = proc_ids(run(request).out);
    CHECK(ids.ppid == ::getpid());
    CHECK(ids.pgrp == ids.pid);
    CHECK(ids.session == ::getsid(0));
  }
  SECTION("new session") {
    request.setsid = true;
    ProcIds ids = proc_ids(run(request).out);
    CHECK(ids.pgrp == ids.pid);
    CHECK(ids.session == ids.pid);
  }
  SECTION("default: the shim's group") {
    CHECK(proc_ids(run(request).out).pgrp == ::getpgrp());
  }
}

TEST_CASE("parent death signal fires when the spawning thread exits", "[spawner]") {
  SpawnRequest request;
  request.path = "/bin/sleep";
  request.argv = {"sleep", "20"};
  request.parent_death_signal = SIGKILL;
  SpawnedProcess child;
  Status spawned;
  std::thread spawning_thread([&] {
    PosixSpawner spawner;
    spawned = spawner.spawn(request, &child);
  });
  spawning_thread.join();
  REQUIRE(spawned.ok());
  REQUIRE(child.handle.has_pidfd());
  pollfd exited{child.handle.pidfd(), POLLIN, 0};
  int ready = ::poll(&exited, 1, 10000);
  if (ready != 1) child.handle.signal(SIGKILL).ignore_error();  // do not leave it behind on failure
  int status = wait_for(child.pid);
  CHECK(ready == 1);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("ProcessHandle never signals a reaped pid", "[spawner]") {
  REQUIRE(ProcessHandle::pidfd_supported());
  PosixSpawner spawner;
  SpawnedProcess child;
  SpawnRequest request{.path = "/bin/sleep", .argv = {"sleep", "20"}};
  REQUIRE(spawner.spawn(request, &child).ok());
  ProcessHandle& handle = child.handle;
  REQUIRE(handle.has_pidfd());
  CHECK(handle.pid() == child.pid);
  CHECK(handle.signal(0).ok());
  CHECK(handle.signal(SIGKILL).ok());
  // A zombie still holds its pid: signals are accepted, as with kill(2).
  pollfd exited{handle.pidfd(), POLLIN, 0};
  REQUIRE(::poll(&exited, 1, 10000) == 1);
  CHECK(handle.signal(0).ok());

  int status = wait_for(child.pid);
  CHECK(WTERMSIG(status) == SIGKILL);
  Status after = handle.signal(SIGTERM);
  CHECK(after.code() == shim::Code::kNotFound);
  CHECK(after.message() ==
        "signal 15 to pid " + std::to_string(child.pid) + ": process already finished: not found");

  ProcessHandle reopened;
  CHECK(ProcessHandle::open(child.pid, &reopened).code() == shim::Code::kNotFound);

  SECTION("open() on a live process, and the kill(2) fallback refusing after mark_reaped") {
    SpawnedProcess other;
    REQUIRE(spawner.spawn(request, &other).ok());
    ProcessHandle opened;
    REQUIRE(ProcessHandle::open(other.pid, &opened).ok());
    CHECK(opened.has_pidfd());
    ProcessHandle no_pidfd(other.pid, -1);
    CHECK(no_pidfd.signal(SIGKILL).ok());
    CHECK(WTERMSIG(wait_for(other.pid)) == SIGKILL);
    no_pidfd.mark_reaped();
    CHECK(no_pidfd.signal(SIGKILL).code() == shim::Code::kNotFound);
    CHECK(opened.signal(SIGKILL).code() == shim::Code::kNotFound);
  }
}
