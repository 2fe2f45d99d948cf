// PosixSpawner applying a process's own settings: user, groups, umask, rlimits,
// no_new_privs, capabilities, oom_score_adj, stdio ownership and a controlling terminal,
// each checked from inside the spawned process (busybox reading /proc/self), and the
// error of each failing step naming it. Root only, as the whole suite.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <linux/capability.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/stdio/pty.h"
#include "support/busybox_rootfs.h"
#include "unit/isolated_child.h"
#include "unit/process/child_wait.h"

namespace {

using shim::PosixSpawner;
using shim::SpawnedProcess;
using shim::SpawnRequest;
using shim::Status;

constexpr std::uint64_t bit(int cap) { return std::uint64_t{1} << cap; }

struct Run {
  Status status;
  std::string out;
  int exit_code = -1;
};

// Spawns busybox `script` (sh -c) with stdout on a pipe; reads it and reaps the child.
Run run_shell(SpawnRequest request, const std::string& script) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  request.path = shim::test::kBusyboxBinary;
  request.argv = {"sh", "-c", script};
  request.fds.emplace_back(1, fds[1]);
  SpawnedProcess child;
  Run run;
  run.status = PosixSpawner().spawn(request, &child);
  ::close(fds[1]);
  if (run.status.ok()) {
    run.out = shim_test::read_to_end(fds[0]);
    int status = shim_test::wait_for_child(child.pid);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ::close(fds[0]);
  return run;
}

// "Name:\tvalue" lines of /proc/<pid>/status as the child printed them.
std::map<std::string, std::string> status_fields(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    fields[line.substr(0, colon)] = value;
  }
  return fields;
}

std::string hex16(std::uint64_t bits) { return fmt::format("{:016x}", bits); }

}  // namespace

TEST_CASE("spawner: user, groups, umask, no_new_privs and capabilities as the child sees them",
          "[spawner][credentials]") {
  SpawnRequest request;
  request.user = shim::SpawnUser{.uid = 1000, .gid = 1001, .additional_gids = {20, 30}};
  request.umask = 027;
  request.no_new_privileges = true;
  request.capabilities =
      shim::CapabilitySets{.bounding = bit(CAP_CHOWN) | bit(CAP_KILL) | bit(CAP_NET_BIND_SERVICE),
                           .effective = bit(CAP_KILL) | bit(CAP_NET_BIND_SERVICE),
                           .permitted = bit(CAP_KILL) | bit(CAP_NET_BIND_SERVICE),
                           .inheritable = bit(CAP_KILL) | bit(CAP_NET_BIND_SERVICE),
                           .ambient = bit(CAP_NET_BIND_SERVICE)};
  Run run = run_shell(request, "cat /proc/self/status");
  INFO(run.status.to_string() << "\n" << run.out);
  REQUIRE(run.status.ok());
  CHECK(run.exit_code == 0);
  auto fields = status_fields(run.out);
  CHECK(fields["Uid"] == "1000\t1000\t1000\t1000");
  CHECK(fields["Gid"] == "1001\t1001\t1001\t1001");
  CHECK(fields["Groups"] == "20 30");
  CHECK(fields["Umask"] == "0027");
  CHECK(fields["NoNewPrivs"] == "1");
  // A non-root process after exec: what survives is the ambient set (permitted and
  // effective), the inheritable and bounding sets as given.
  CHECK(fields["CapAmb"] == hex16(bit(CAP_NET_BIND_SERVICE)));
  CHECK(fields["CapPrm"] == hex16(bit(CAP_NET_BIND_SERVICE)));
  CHECK(fields["CapEff"] == hex16(bit(CAP_NET_BIND_SERVICE)));
  CHECK(fields["CapInh"] == hex16(bit(CAP_KILL) | bit(CAP_NET_BIND_SERVICE)));
  CHECK(fields["CapBnd"] == hex16(bit(CAP_CHOWN) | bit(CAP_KILL) | bit(CAP_NET_BIND_SERVICE)));

  SECTION("root keeps exactly the bounding set after exec; without capabilities, the shim's") {
    SpawnRequest as_root;
    as_root.user = shim::SpawnUser{};
    as_root.capabilities = shim::CapabilitySets{.bounding = bit(CAP_CHOWN) | bit(CAP_SETUID),
                                                .effective = bit(CAP_CHOWN),
                                                .permitted = bit(CAP_CHOWN)};
    auto root_fields = status_fields(run_shell(as_root, "cat /proc/self/status").out);
    CHECK(root_fields["Uid"] == "0\t0\t0\t0");
    CHECK(root_fields["Groups"] == "");
    CHECK(root_fields["CapBnd"] == hex16(bit(CAP_CHOWN) | bit(CAP_SETUID)));
    CHECK(root_fields["CapPrm"] == hex16(bit(CAP_CHOWN) | bit(CAP_SETUID)));
    CHECK(root_fields["NoNewPrivs"] == "0");
    auto shim_fields = status_fields(run_shell(SpawnRequest{}, "cat /proc/self/status").out);
    std::ifstream own("/proc/self/status");
    auto own_fields = status_fields(std::string(std::istreambuf_iterator<char>(own), {}));
    CHECK(shim_fields["CapBnd"] == own_fields["CapBnd"]);
    CHECK(shim_fields["Umask"] == own_fields["Umask"]);
  }
}

TEST_CASE("spawner: rlimits and oom_score_adj as the child sees them", "[spawner][credentials]") {
  SpawnRequest request;
  request.rlimits = {{RLIMIT_NOFILE, 100, 200}, {RLIMIT_CORE, 0, RLIM_INFINITY}};
  request.oom_score_adj = 512;
  request.user = shim::SpawnUser{.uid = 65534, .gid = 65534};
  Run run = run_shell(
      request,
      "cat /proc/self/oom_score_adj; grep -E '^Max (open files|core file size)' /proc/self/limits");
  INFO(run.status.to_string());
  REQUIRE(run.status.ok());
  std::string squeezed;
  for (char c : run.out) {
    if (c != ' ' || (!squeezed.empty() && squeezed.back() != ' ')) squeezed += c;
  }
  CHECK(squeezed ==
        "512\n"
        "Max core file size 0 unlimited bytes \n"
        "Max open files 100 200 files \n");
  // The shim's own score is untouched.
  std::ifstream own("/proc/self/oom_score_adj");
  std::string own_score;
  own >> own_score;
  CHECK(own_score != "512");

  SECTION("a value out of range is refused before any child exists") {
    SpawnRequest bad;
    bad.oom_score_adj = 1001;
    Run refused = run_shell(bad, "true");
    CHECK(refused.status.code() == shim::Code::kInvalidArgument);
    CHECK(refused.status.message() ==
          "spawn /bin/busybox: oom_score_adj 1001 is not in -1000..1000: invalid argument");
  }
}

TEST_CASE("spawner: the user's stdio is chowned to it so it may reopen it",
          "[spawner][credentials]") {
  SpawnRequest request;
  request.user = shim::SpawnUser{.uid = 1000, .gid = 1000};
  // /dev/stdout is /proc/self/fd/1: reopening a root-owned 0600 pipe needs the chown.
  Run run = run_shell(request, "echo reopened > /dev/stdout");
  INFO(run.status.to_string());
  REQUIRE(run.status.ok());
  CHECK(run.out == "reopened\n");
  CHECK(run.exit_code == 0);
}

TEST_CASE("spawner: a controlling terminal in a new session", "[spawner][credentials]") {
  shim::Pty pty;
  REQUIRE(shim::Pty::open(&pty).ok());
  REQUIRE(pty.resize(40, 120).ok());
  SpawnRequest request;
  request.path = shim::test::kBusyboxBinary;
  request.argv = {"sh", "-c",
                  "[ -t 0 ] && echo tty; stty size; "
                  "cut -d' ' -f6,7 /proc/self/stat; echo x > /dev/tty && echo ctty"};
  request.fds = {{0, pty.slave()}, {1, pty.slave()}, {2, pty.slave()}};
  request.controlling_terminal = true;
  SpawnedProcess child;
  Status status = PosixSpawner().spawn(request, &child);
  INFO(status.to_string());
  REQUIRE(status.ok());
  struct stat slave {};
  REQUIRE(::fstat(pty.slave(), &slave) == 0);
  int master = ::dup(pty.master());
  pty = shim::Pty();  // only the child holds the slave now: EIO at its exit
  std::string out;
  char buffer[1024];
  for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<std::size_t>(n));
  ::close(master);
  CHECK(WEXITSTATUS(shim_test::wait_for_child(child.pid)) == 0);
  std::string lines;
  for (char c : out) {
    if (c != '\r') lines += c;
  }
  // Session id == its pid (setsid), tty_nr == the slave's device (TIOCSCTTY).
  CHECK(lines == fmt::format("tty\n40 120\n{} {}\nx\nctty\n", child.pid, slave.st_rdev));
}

TEST_CASE("spawner: each failing settings step names itself", "[spawner][credentials]") {
  // Without CAP_SETUID and CAP_SYS_RESOURCE in a child process of our own: setuid and
  // lowering oom_score_adj are refused.
  auto outcome = shim_test::run_in_child([](shim_test::ChildReport& report) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    ::syscall(SYS_capget, &header, data);
    data[0].effective &= ~(1U << CAP_SETUID | 1U << CAP_SYS_RESOURCE);
    report.check(::syscall(SYS_capset, &header, data) == 0, "capset");
    SpawnRequest request;
    request.path = "/bin/true";
    request.user = shim::SpawnUser{.uid = 1000, .gid = 1000};
    SpawnedProcess child;
    Status status = PosixSpawner().spawn(request, &child);
    report.check(status.message() == "spawn /bin/true: setuid 1000: Operation not permitted",
                 status.message());
    request.user.reset();
    request.oom_score_adj = -999;
    status = PosixSpawner().spawn(request, &child);
    report.check(
        status.message() == "spawn /bin/true: write /proc/self/oom_score_adj: Permission denied",
        status.message());
    request.oom_score_adj.reset();
    request.rlimits = {{RLIMIT_NOFILE, 10, RLIM_INFINITY}};  // raising the hard limit
    rlimit current{};
    ::getrlimit(RLIMIT_NOFILE, &current);
    status = PosixSpawner().spawn(request, &child);
    report.check(
        current.rlim_max == RLIM_INFINITY ||
            status.message() == "spawn /bin/true: setrlimit RLIMIT_NOFILE: Operation not permitted",
        status.message());
  });
  shim_test::require_child_passed(outcome);

  SECTION("an ambient capability the kernel refuses") {
    SpawnRequest request;
    request.path = "/bin/true";
    request.capabilities = shim::CapabilitySets{.bounding = ~std::uint64_t{0},
                                                .permitted = bit(CAP_KILL),
                                                .ambient = bit(CAP_KILL)};  // not inheritable
    SpawnedProcess child;
    Status status = PosixSpawner().spawn(request, &child);
    CHECK(status.message() == "spawn /bin/true: raise ambient CAP_KILL: Operation not permitted");
  }
  SECTION("capset beyond the permitted set") {
    SpawnRequest request;
    request.path = "/bin/true";
    request.user = shim::SpawnUser{.uid = 1000, .gid = 1000};
    request.capabilities =
        shim::CapabilitySets{.bounding = bit(CAP_KILL), .effective = bit(CAP_CHOWN)};
    SpawnedProcess child;
    Status status = PosixSpawner().spawn(request, &child);
    CHECK(status.message() == "spawn /bin/true: capset: Operation not permitted");
  }
  SECTION("a controlling terminal that is not a terminal") {
    SpawnRequest request;
    request.path = "/bin/true";
    request.controlling_terminal = true;  // fd 0 is /dev/null
    SpawnedProcess child;
    Status status = PosixSpawner().spawn(request, &child);
    CHECK(status.message() ==
          "spawn /bin/true: set controlling terminal (TIOCSCTTY): Inappropriate ioctl for device");
  }
}
