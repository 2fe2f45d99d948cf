// PosixSpawner's container pieces: held children (created, started later), new pid and
// mount namespaces, chroot, /proc, and joining another process's namespaces. Root only
// (as the whole suite); the children are reaped by pid here.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "support/busybox_rootfs.h"
#include "support/temp_dir.h"
#include "unit/process/child_wait.h"

namespace {

using shim::PosixSpawner;
using shim::SpawnedProcess;
using shim::SpawnRequest;
using shim::Status;

struct Pipe {
  Pipe() { REQUIRE(::pipe2(fds, O_CLOEXEC) == 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void close_write() {
    ::close(fds[1]);
    fds[1] = -1;
  }
  std::string read_all() { return shim_test::read_to_end(fds[0]); }

  bool readable_within(int ms) {
    pollfd p{fds[0], POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
  }
  int fds[2] = {-1, -1};
};

std::string rootfs() {
  static shim::test::TempDir dir;
  static bool made = false;
  if (!made) {
    shim::test::make_busybox_rootfs(dir.path() + "/rootfs");
    made = true;
  }
  return dir.path() + "/rootfs";
}

bool is_mount_point(const std::string& path) {
  int fd = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::string text;
  char buffer[65536];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return text.find(" " + path + " ") != std::string::npos;
}

SpawnRequest container_shell(const std::string& script, int stdout_fd) {
  SpawnRequest request;
  request.path = "/bin/sh";  // inside the root
  request.argv = {"sh", "-c", script};
  request.env = std::vector<std::string>{"PATH=/bin"};
  request.root = rootfs();
  request.fds = {{1, stdout_fd}};
  return request;
}

}  // namespace

TEST_CASE("a held child runs nothing until its gate is released", "[spawner][container]") {
  Pipe out;
  SpawnRequest request = container_shell("echo started", out.fds[1]);
  request.hold = true;
  SpawnedProcess child;
  PosixSpawner spawner;
  Status status = spawner.spawn(request, &child);
  INFO(status.to_string());
  REQUIRE(status.ok());
  REQUIRE(child.gate.valid());
  out.close_write();
  CHECK_FALSE(out.readable_within(100));  // alive, held before exec
  CHECK(::kill(child.pid, 0) == 0);

  REQUIRE(child.gate.release().ok());
  CHECK_FALSE(child.gate.valid());
  CHECK(out.read_all() == "started\n");
  int wait_status = shim_test::wait_for_child(child.pid);
  CHECK(WIFEXITED(wait_status));
  CHECK(WEXITSTATUS(wait_status) == 0);
  CHECK(child.gate.release().code() == shim::Code::kFailedPrecondition);
}

TEST_CASE("dropping a held child's gate ends it without running anything", "[spawner][container]") {
  Pipe out;
  SpawnRequest request = container_shell("echo ran", out.fds[1]);
  request.hold = true;
  SpawnedProcess child;
  REQUIRE(PosixSpawner().spawn(request, &child).ok());
  out.close_write();
  child.gate = shim::ProcessGate();  // the old gate closes
  int wait_status = shim_test::wait_for_child(child.pid);
  CHECK(WIFEXITED(wait_status));
  CHECK(WEXITSTATUS(wait_status) == 127);
  CHECK(out.read_all().empty());
}

TEST_CASE("a held child's exec failure is the release's error", "[spawner][container]") {
  SpawnRequest request = container_shell("true", 2);
  request.path = "/no/such/binary";
  request.hold = true;
  SpawnedProcess child;
  REQUIRE(PosixSpawner().spawn(request, &child).ok());
  Status status = child.gate.release();
  CHECK(status.message() == "exec /no/such/binary: No such file or directory");
  shim_test::wait_for_child(child.pid);
}

TEST_CASE("set-up failures of a container child name their step", "[spawner][container]") {
  SpawnRequest request = container_shell("true", 2);
  request.root = "/no/such/root";
  SpawnedProcess child;
  Status status = PosixSpawner().spawn(request, &child);
  CHECK(status.message() == "spawn /bin/sh: chroot /no/such/root: No such file or directory");

  request.root = rootfs();
  request.cwd = "/no/such/dir";
  status = PosixSpawner().spawn(request, &child);
  CHECK(status.message() == "spawn /bin/sh: chdir /no/such/dir: No such file or directory");
}

TEST_CASE("a child in new pid and mount namespaces is pid 1 and has its own /proc",
          "[spawner][container]") {
  Pipe out;
  SpawnRequest request = container_shell(
      "echo $$; kill -9 $$; ls /proc/1/exe >/dev/null && echo proc; echo alive", out.fds[1]);
  request.new_namespaces = CLONE_NEWPID | CLONE_NEWNS;
  request.mount_proc = true;
  SpawnedProcess child;
  Status status = PosixSpawner().spawn(request, &child);
  INFO(status.to_string());
  REQUIRE(status.ok());
  out.close_write();
  // A pid namespace's init ignores signals it has no handler for, even SIGKILL from
  // inside: the shell lives on.
  CHECK(out.read_all() == "1\nproc\nalive\n");
  CHECK(WEXITSTATUS(shim_test::wait_for_child(child.pid)) == 0);
  // The /proc mount stayed in the child's namespace.
  CHECK_FALSE(is_mount_point(rootfs() + "/proc"));
}

TEST_CASE("mount_dev gives the child a container's /dev, seen only in its namespace",
          "[spawner][container]") {
  Pipe out;
  // A background job's stdin is /dev/null (busybox ash opens it); the rest as runc has it.
  SpawnRequest request = container_shell(
      "sleep 0 & wait $!; echo x > /dev/null; head -c 4 /dev/zero | wc -c; "
      "echo /dev/*; stat -c '%a %t,%T' /dev/null /dev/tty; readlink /dev/fd",
      out.fds[1]);
  request.new_namespaces = CLONE_NEWPID | CLONE_NEWNS;
  request.mount_proc = true;
  request.mount_dev = true;
  SpawnedProcess child;
  Status status = PosixSpawner().spawn(request, &child);
  INFO(status.to_string());
  REQUIRE(status.ok());
  out.close_write();
  CHECK(out.read_all() ==
        "4\n/dev/fd /dev/full /dev/null /dev/pts /dev/random /dev/shm /dev/stderr /dev/stdin "
        "/dev/stdout /dev/tty /dev/urandom /dev/zero\n"
        "666 1,3\n666 5,0\n/proc/self/fd\n");
  CHECK(WEXITSTATUS(shim_test::wait_for_child(child.pid)) == 0);
  CHECK_FALSE(is_mount_point(rootfs() + "/dev"));
}

TEST_CASE("a child joins another process's pid and mount namespaces", "[spawner][container]") {
  Pipe init_out;
  SpawnRequest init_request = container_shell("echo up; exec sleep 100", init_out.fds[1]);
  init_request.new_namespaces = CLONE_NEWPID | CLONE_NEWNS;
  init_request.mount_proc = true;
  init_request.hold = true;
  SpawnedProcess init;
  REQUIRE(PosixSpawner().spawn(init_request, &init).ok());
  REQUIRE(init.handle.has_pidfd());
  REQUIRE(init.gate.release().ok());
  init_out.close_write();
  char line[3] = {};
  REQUIRE(::read(init_out.fds[0], line, 3) == 3);
  // "up" comes before the exec: wait until the init is sleep (seen from the host).
  const std::string sleeping(
      "sleep\0"
      "100",
      9);
  bool exec_done = false;
  for (int i = 0; i < 200 && !exec_done; ++i) {
    std::ifstream cmdline(fmt::format("/proc/{}/cmdline", init.pid), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    exec_done = text.find(sleeping) != std::string::npos;
    if (!exec_done) ::usleep(10000);
  }
  REQUIRE(exec_done);

  Pipe out;
  SpawnRequest exec = container_shell("echo $$; cat /proc/1/cmdline", out.fds[1]);
  exec.join_pidfd = init.handle.pidfd();
  exec.join_namespaces = CLONE_NEWPID | CLONE_NEWNS;
  SpawnedProcess joined;
  Status status = PosixSpawner().spawn(exec, &joined);
  INFO(status.to_string());
  REQUIRE(status.ok());
  out.close_write();
  std::string text = out.read_all();
  CHECK(text.substr(0, text.find('\n')) != std::to_string(joined.pid));  // a pid of that namespace
  CHECK(text.find(sleeping) != std::string::npos);
  shim_test::wait_for_child(joined.pid);
  ::kill(init.pid, SIGKILL);
  shim_test::wait_for_child(init.pid);

  // This thread's later children are back in the shim's own pid namespace.
  Pipe plain;
  SpawnRequest plain_request{
      .path = "/bin/sh", .argv = {"sh", "-c", "echo $$"}, .fds = {{1, plain.fds[1]}}};
  SpawnedProcess third;
  REQUIRE(PosixSpawner().spawn(plain_request, &third).ok());
  plain.close_write();
  CHECK(plain.read_all() == std::to_string(third.pid) + "\n");
  shim_test::wait_for_child(third.pid);
}

// On cgroup v1 the child moves itself through the `tasks` file beside each cgroup.procs
// (single-threaded then, it so skips the kernel's global threadgroup lock); where there
// is none (v2) it writes cgroup.procs. Plain files stand in for the cgroups here.
TEST_CASE("a child joins a v1 cgroup through its tasks file, a v2 one through cgroup.procs",
          "[spawner][container]") {
  shim::test::TempDir dir;
  const std::string v1 = dir.path() + "/v1", v2 = dir.path() + "/v2";
  for (const std::string& file : {v1 + "/cgroup.procs", v1 + "/tasks", v2 + "/cgroup.procs"}) {
    std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    std::ofstream(file).flush();
  }
  SpawnRequest request = container_shell("true", 2);
  request.cgroup_procs = {v1 + "/cgroup.procs", v2 + "/cgroup.procs"};
  SpawnedProcess child;
  Status status = PosixSpawner().spawn(request, &child);
  INFO(status.to_string());
  REQUIRE(status.ok());
  shim_test::wait_for_child(child.pid);
  auto text = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  CHECK(text(v1 + "/tasks") == "0");
  CHECK(text(v1 + "/cgroup.procs").empty());
  CHECK(text(v2 + "/cgroup.procs") == "0");

  // A failure names the file the child wrote.
  const std::string bad = dir.path() + "/bad";
  std::filesystem::create_directories(bad + "/tasks");
  std::ofstream(bad + "/cgroup.procs").flush();
  request.cgroup_procs = {bad + "/cgroup.procs"};
  status = PosixSpawner().spawn(request, &child);
  CHECK(status.message() ==
        fmt::format("spawn /bin/sh: join cgroup {}/tasks: Is a directory", bad));
}
