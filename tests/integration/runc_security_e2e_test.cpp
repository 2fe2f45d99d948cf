// Security properties of shim-runc under a real containerd, tested:
//   - the shim's socket is 0600 in a 0700 directory;
//   - a connection from another uid is refused (SO_PEERCRED, as the Go shim's
//     ttrpc.UnixSocketRequireSameUser): a child that drops to uid 65534 gets no answer,
//     while the same request as root does;
//   - no shim fd reaches runc, a binary:// logger, a container's process or an exec's,
//     with and without a terminal (runc CVE-2024-21626 is this class of bug). Each
//     process lists its own /proc/<pid>/fd; only stdio (and a logger's 3-5) may be there.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "shim/pb/containerd/task_v2.pb.h"
#include "ttrpc/wire.h"
#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

// A ttrpc frame carrying Task.State for `id` (built before fork: the child only writes).
std::string state_request_frame(const std::string& service, const std::string& id) {
  containerd::task::v2::StateRequest state;
  state.set_id(id);
  return ttrpc::wire::request_frame(1, service, "State", state.SerializeAsString(), std::nullopt, {});
}

// Forks a child that becomes `uid` (keeping only CAP_DAC_OVERRIDE, so the 0700 directory
// and the 0600 socket do not stop it first: the shim's own check is what is tested),
// connects to `path`, sends `frame` and reads for up to 5 s. Returns the bytes of answer
// it got (0: the shim closed the connection), or -1 if the child could not connect.
int answer_bytes_as(uid_t uid, const std::string& path, const std::string& frame) {
  int report[2];
  REQUIRE(::pipe2(report, O_CLOEXEC) == 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int got = -1;
    if (uid != 0) {
      __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct data[2] = {};
      data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
      if (::prctl(PR_SET_KEEPCAPS, 1) != 0 || ::setgroups(0, nullptr) != 0 ||
          ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0 ||
          ::syscall(SYS_capset, &header, data) != 0 || ::geteuid() != uid) {
        ::_exit(3);
      }
    }
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      got = 0;
      (void)!::write(fd, frame.data(), frame.size());
      char buffer[4096];
      pollfd p{fd, POLLIN, 0};
      while (::poll(&p, 1, 5000) == 1) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) break;
        got += static_cast<int>(n);
        if (got >= 10) break;
      }
    }
    (void)!::write(report[1], &got, sizeof got);
    ::_exit(0);
  }
  ::close(report[1]);
  int got = -2;
  ssize_t n = ::read(report[0], &got, sizeof got);
  ::close(report[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);  // 3: could not become the other user
  REQUIRE(n == static_cast<ssize_t>(sizeof got));
  return got;
}

TEST_CASE("security: socket 0600 in a closed dir and another uid refused by SO_PEERCRED",
          "[security][runc-e2e][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "sec", {"/bin/sleep", "600"})).ok());
  std::string path = unix_path_of(s.fx.shim_address("sec"));
  REQUIRE(!path.empty());
  struct stat socket_stat {}, dir_stat {};
  REQUIRE(::lstat(path.c_str(), &socket_stat) == 0);
  REQUIRE(::stat(fs::path(path).parent_path().c_str(), &dir_stat) == 0);
  CHECK(S_ISSOCK(socket_stat.st_mode));
  CHECK((socket_stat.st_mode & 07777) == 0600);
  CHECK(socket_stat.st_uid == 0);
  // Nothing for group or others. The Go shim creates /run/containerd/s 0600 and we keep
  // an existing dir as it is (we create it 0700): either shuts out every other uid.
  CHECK((dir_stat.st_mode & 077) == 0);
  CHECK(dir_stat.st_uid == 0);

  std::string frame = state_request_frame(task_service_for(s.fx.version()), "sec");
  int as_root = answer_bytes_as(0, path, frame);
  int as_nobody = answer_bytes_as(kNobody, path, frame);
  WARN(fmt::format("LIBSHIM-SECURITY: socket mode={:o} dir mode={:o} answer_bytes root={} "
                   "uid65534={}",
                   socket_stat.st_mode & 07777, dir_stat.st_mode & 07777, as_root, as_nobody));
  CHECK(as_root >= 10);    // control: the same request as root is answered
  CHECK(as_nobody == 0);   // connected, then dropped without a byte
  CHECK(s.fx.ctr_ok({"task", "exec", "--exec-id", "after", "sec", "/bin/true"}).ok());
}

// "<fd> -> <target>" pairs from `ls -l /proc/<pid>/fd` output (busybox or coreutils).
std::map<int, std::string> parse_ls_fds(const std::string& text) {
  std::map<int, std::string> fds;
  static const std::regex line(R"((\d+) -> (.*?)\r*$)");
  std::istringstream in(text);
  for (std::string row; std::getline(in, row);) {
    std::smatch m;
    if (std::regex_search(row, m, line)) fds[std::stoi(m[1])] = m[2];
  }
  return fds;
}

std::string describe(const std::map<int, std::string>& fds) {
  std::string out;
  for (const auto& [fd, target] : fds) out += fmt::format("{}->{} ", fd, target);
  return out;
}

// Lists the fds of the container's shell itself ("; true" keeps busybox from exec'ing ls).
const std::vector<std::string> kListFds = {"/bin/sh", "-c", "ls -l /proc/$$/fd; true"};

bool only_stdio(const std::map<int, std::string>& fds) {
  for (const auto& [fd, target] : fds) {
    if (fd > 2) return false;
  }
  return fds.size() == 3;
}

TEST_CASE("security: no shim fd reaches runc, the logger, containers or execs",
          "[security][runc-e2e]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  // runc, through the failpoint wrapper in record-only mode: every runc command lists
  // the fds it was started with.
  std::string wrapper = s.fx.dir() + "/runc-failpoint.sh";
  fs::copy_file(fs::path(LIBSHIM_SOURCE_DIR) / "tests/support/runc-failpoint.sh", wrapper);
  fs::permissions(wrapper, fs::perms::owner_all);
  std::ofstream(s.fx.dir() + "/fds").flush();
  auto with_wrapper = [&](std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--runc-binary", wrapper});
    return flags;
  };

  // A container and an exec, without a terminal.
  auto init = s.fx.ctr(s.run(with_wrapper({"--rm"}), "fd-init", kListFds));
  REQUIRE(init.ok());
  auto init_fds = parse_ls_fds(init.out);
  REQUIRE(s.fx.ctr_ok(s.run(with_wrapper({"-d"}), "fd-c", {"/bin/sleep", "600"})).ok());
  auto exec = s.fx.ctr({"task", "exec", "--exec-id", "e1", "fd-c", kListFds[0], kListFds[1], kListFds[2]});
  REQUIRE(exec.ok());
  auto exec_fds = parse_ls_fds(exec.out);
  // The container's init as the host sees it.
  pid_t pid = s.task_pid("fd-c");
  REQUIRE(pid > 0);
  std::map<int, std::string> host_view;
  for (const auto& entry : fs::directory_iterator(fmt::format("/proc/{}/fd", pid))) {
    host_view[std::stoi(entry.path().filename().string())] = fs::read_symlink(entry.path()).string();
  }

  // The same with a terminal, ctr inside `script` (it needs a tty of its own).
  std::map<int, std::string> tty_init, tty_exec;
  if (::access("/usr/bin/script", X_OK) == 0) {
    auto in_tty = [&](std::vector<std::string> args) {
      std::string command = "exec";
      for (const auto& word : std::vector<std::string>{s.fx.ctr_bin(), "--address", s.fx.grpc_address(), "-n", s.fx.ns()}) {
        command += " '" + word + "'";
      }
      for (const auto& word : args) command += " '" + word + "'";
      return run_command({"/usr/bin/script", "-qec", command, "/dev/null"}, {.timeout = 60s});
    };
    auto t1 = in_tty(s.run(with_wrapper({"--rm", "-t"}), "fd-tty", {"/bin/sh", "-c", "ls -l /proc/$$/fd; true"}));
    tty_init = parse_ls_fds(t1.out);
    auto t2 = in_tty({"task", "exec", "-t", "--exec-id", "e2", "fd-c", "/bin/sh", "-c", "ls -l /proc/$$/fd; true"});
    tty_exec = parse_ls_fds(t2.out);
    INFO("tty run: " << t1.describe() << "\ntty exec: " << t2.describe());
    CHECK(t1.ok());
    CHECK(t2.ok());
  }

  // A binary:// logger lists its own fds.
  std::string logger = s.fx.dir() + "/logger.sh";
  // It says ready (closes 5) first, then lists what it has: stdio, 3 and 4.
  // ls runs as a child: it sees what the logger inherited (the shell's own fds are
  // CLOEXEC), plus the /proc dir it opens.
  std::ofstream(logger) << "#!/bin/sh\nexec 5>&-\nls -l /proc/self/fd > \"${0%/*}/logger-fds\"\n"
                           "exec /bin/cat <&3 >/dev/null\n";
  fs::permissions(logger, fs::perms::owner_all);
  REQUIRE(s.fx.ctr_ok({"run", "--rm", "--log-uri", "binary://" + logger, "--runc-root", s.fx.runc_root(),
                       "--rootfs", s.rootfs, "fd-log", "/bin/true"}).ok());
  std::ifstream logger_in(s.fx.dir() + "/logger-fds");
  std::stringstream logger_text;
  logger_text << logger_in.rdbuf();
  auto logger_fds = parse_ls_fds(logger_text.str());
  std::erase_if(logger_fds, [](const auto& entry) { return entry.second.starts_with("/proc/"); });

  // runc's fds: anything beyond stdio other than the script itself and the /proc dir
  // its listing opened.
  std::ifstream runc_in(s.fx.dir() + "/fds");
  std::map<std::string, std::vector<std::string>> runc_extra;
  std::set<std::string> runc_commands;
  for (std::string command, fd, target; runc_in >> command >> fd && std::getline(runc_in >> std::ws, target);) {
    runc_commands.insert(command);
    if (std::stoi(fd) <= 2 || target.find(wrapper) != std::string::npos ||
        target.find("/proc/") == 0) {
      continue;
    }
    runc_extra[command].push_back(fd + target);
  }

  std::string report = fmt::format(
      "init: {}| exec: {}| host view of init: {}| tty init: {}| tty exec: {}| logger: {}| runc "
      "commands seen: {} with extra fds: {}",
      describe(init_fds), describe(exec_fds), describe(host_view), describe(tty_init),
      describe(tty_exec), describe(logger_fds), runc_commands.size(), runc_extra.size());
  WARN("LIBSHIM-SECURITY: " << report);
  CHECK(only_stdio(init_fds));
  CHECK(only_stdio(exec_fds));
  CHECK(only_stdio(host_view));
  if (::access("/usr/bin/script", X_OK) == 0) {
    CHECK(only_stdio(tty_init));
    CHECK(only_stdio(tty_exec));
    for (const auto& [fd, target] : tty_init) CHECK(target.rfind("/dev/pts/", 0) == 0);
  }
  // The logger: stdio plus the protocol's fds 3 (stdout), 4 (stderr); 5 it closed itself.
  CHECK(logger_fds.size() == 5);
  for (const auto& [fd, target] : logger_fds) CHECK(fd <= 4);
  CHECK(runc_commands.count("create") == 1);
  CHECK(runc_commands.count("exec") == 1);
  for (const auto& [command, fds] : runc_extra) {
    INFO("runc " << command);
    for (const auto& fd : fds) CHECK(fd == std::string());
  }
}

}  // namespace
}  // namespace shim::test
