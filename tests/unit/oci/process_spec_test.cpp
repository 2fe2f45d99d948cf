// shim::oci::spawn_request_from_process: what each OCI process field becomes in the
// SpawnRequest, and the error (InvalidArgument, naming the field) for everything it
// cannot apply or read. Spawning what it makes: spawner_credentials_test.cpp and
// spawner_search_test.cpp.
#include "shim/oci/process_spec.h"

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <linux/capability.h>

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "shim/stdio/console_socket.h"
#include "support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using shim::Code;
using shim::Status;
using shim::oci::ProcessSpawn;
using shim::oci::ProcessTarget;
using shim::oci::spawn_request_from_process;

// A root with an /etc/passwd (for HOME) and nothing else.
struct Root {
  Root() {
    std::filesystem::create_directories(dir.sub("etc"));
    std::ofstream(dir.sub("etc/passwd")) << "root:x:0:0:root:/root:/bin/sh\n"
                                         << "# a comment line\n"
                                         << "svc:x:1000:1000::/home/svc:/bin/sh\n";
  }
  shim::test::TempDir dir{"oci-"};
};

// The process as containerd's default spec writes it (oci/spec.go), plus a few more.
boost::json::value default_process() {
  return boost::json::parse(R"({
    "user": {"uid": 0, "gid": 0},
    "args": ["sh", "-c", "exit 0"],
    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    "cwd": "/",
    "capabilities": {
      "bounding": ["CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
      "effective": ["CAP_CHOWN", "CAP_KILL"],
      "permitted": ["CAP_CHOWN", "CAP_KILL"]
    },
    "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
    "noNewPrivileges": true
  })");
}

ProcessSpawn made(const boost::json::value& process, const ProcessTarget& target) {
  ProcessSpawn spawn;
  Status status = spawn_request_from_process(process, target, &spawn);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return spawn;
}

// The error for `process` with `edit` applied to the default one.
Status error_of(const std::function<void(boost::json::object&)>& edit,
                const ProcessTarget& target = {}) {
  boost::json::value process = default_process();
  edit(process.as_object());
  ProcessSpawn spawn;
  Status status = spawn_request_from_process(process, target, &spawn);
  CHECK(status.code() == Code::kInvalidArgument);
  CHECK_FALSE(spawn.pty.valid());
  return status;
}

std::uint64_t bits(std::initializer_list<int> caps) {
  std::uint64_t out = 0;
  for (int cap : caps) out |= std::uint64_t{1} << cap;
  return out;
}

}  // namespace

TEST_CASE("oci process: containerd's default process becomes a complete request", "[oci]") {
  Root root;
  ProcessSpawn spawn =
      made(default_process(), {root.dir.path(), {.stdin = 10, .stdout = 11, .stderr = -1}});
  const shim::SpawnRequest& r = spawn.request;
  CHECK(r.path == "sh");
  CHECK(r.argv == std::vector<std::string>{"sh", "-c", "exit 0"});
  REQUIRE(r.env);
  CHECK(*r.env ==
        std::vector<std::string>{
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"});
  CHECK(r.search_path == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  CHECK(r.cwd == "/");
  CHECK(r.root == root.dir.path());
  CHECK(r.fds == std::vector<std::pair<int, int>>{{0, 10}, {1, 11}});  // stderr: /dev/null
  REQUIRE(r.user);
  CHECK(r.user->uid == 0);
  CHECK(r.user->gid == 0);
  CHECK(r.user->additional_gids.empty());
  CHECK_FALSE(r.umask);
  REQUIRE(r.rlimits.size() == 1);
  CHECK(r.rlimits[0].resource == RLIMIT_NOFILE);
  CHECK(r.rlimits[0].soft == 1024);
  CHECK(r.rlimits[0].hard == 1024);
  CHECK(r.no_new_privileges);
  REQUIRE(r.capabilities);
  CHECK(r.capabilities->bounding == bits({CAP_CHOWN, CAP_KILL, CAP_NET_BIND_SERVICE}));
  CHECK(r.capabilities->effective == bits({CAP_CHOWN, CAP_KILL}));
  CHECK(r.capabilities->permitted == bits({CAP_CHOWN, CAP_KILL}));
  CHECK(r.capabilities->inheritable == 0);
  CHECK(r.capabilities->ambient == 0);
  CHECK_FALSE(r.oom_score_adj);
  CHECK_FALSE(r.controlling_terminal);
  CHECK_FALSE(spawn.pty.valid());
  CHECK(spawn.send_console().ok());  // no terminal: nothing to send
  // What the caller adds is left alone.
  CHECK(r.new_namespaces == 0);
  CHECK_FALSE(r.hold);
}

TEST_CASE("oci process: user, umask, groups, oomScoreAdj, every capability set", "[oci]") {
  Root root;
  boost::json::value process = default_process();
  auto& object = process.as_object();
  object["user"] = boost::json::parse(
      R"({"uid": 1000, "gid": 1001, "umask": 23, "additionalGids": [5, 4294967295]})");
  object["oomScoreAdj"] = -17;
  object["capabilities"] =
      boost::json::parse(R"({"bounding": ["CAP_SYS_ADMIN", "CAP_CHECKPOINT_RESTORE"],
      "effective": [], "permitted": ["CAP_SETFCAP", "CAP_NET_RAW"], "inheritable": ["CAP_NET_RAW", "CAP_BPF"],
      "ambient": ["CAP_NET_RAW"]})");
  object["rlimits"] =
      boost::json::parse(R"([{"type": "RLIMIT_CORE", "hard": 18446744073709551615, "soft": 0},
      {"type": "RLIMIT_NPROC", "hard": 7, "soft": 7}])");
  object["noNewPrivileges"] = nullptr;  // null: absent
  ProcessSpawn spawn = made(process, {root.dir.path(), {}});
  const shim::SpawnRequest& r = spawn.request;
  REQUIRE(r.user);
  CHECK(r.user->uid == 1000);
  CHECK(r.user->gid == 1001);
  CHECK(r.user->additional_gids == std::vector<gid_t>{5, 4294967295U});
  CHECK(r.umask == mode_t{027});  // 23 in the JSON: JSON has no octal
  CHECK(r.oom_score_adj == -17);
  CHECK_FALSE(r.no_new_privileges);
  REQUIRE(r.capabilities);
  CHECK(r.capabilities->bounding == bits({CAP_SYS_ADMIN, 40}));
  CHECK(r.capabilities->effective == 0);
  CHECK(r.capabilities->permitted == bits({CAP_SETFCAP, CAP_NET_RAW}));
  CHECK(r.capabilities->inheritable == bits({CAP_NET_RAW, 39}));
  CHECK(r.capabilities->ambient == bits({CAP_NET_RAW}));
  REQUIRE(r.rlimits.size() == 2);
  CHECK(r.rlimits[0].resource == RLIMIT_CORE);
  CHECK(r.rlimits[0].hard == UINT64_MAX);
  CHECK(r.rlimits[1].resource == RLIMIT_NPROC);
  // HOME from the container's passwd for this uid.
  CHECK(r.env->back() == "HOME=/home/svc");
  CHECK(r.fds.empty());  // no stdio given: all /dev/null
}

TEST_CASE("oci process: env as runc prepares it", "[oci]") {
  Root root;
  boost::json::value process = default_process();
  auto& object = process.as_object();

  SECTION("the last value of a name wins, in the order of those last values") {
    object["env"] = boost::json::parse(
        R"(["A=1", "PATH=/first", "B=2=x", "A=3", "PATH=/bin:/usr/bin", "EMPTY="])");
    ProcessSpawn spawn = made(process, {root.dir.path(), {}});
    CHECK(*spawn.request.env ==
          std::vector<std::string>{"B=2=x", "A=3", "PATH=/bin:/usr/bin", "EMPTY=", "HOME=/root"});
    CHECK(spawn.request.search_path == "/bin:/usr/bin");
  }
  SECTION("HOME kept when set, replaced when empty, \"/\" without a passwd entry") {
    object["env"] = boost::json::parse(R"(["HOME=/data"])");
    CHECK(*made(process, {root.dir.path(), {}}).request.env ==
          std::vector<std::string>{"HOME=/data"});
    object["env"] = boost::json::parse(R"(["HOME=", "X=1"])");
    CHECK(*made(process, {root.dir.path(), {}}).request.env ==
          std::vector<std::string>{"X=1", "HOME=/root"});
    object["user"] = boost::json::parse(R"({"uid": 4242, "gid": 0})");
    CHECK(made(process, {root.dir.path(), {}}).request.env->back() == "HOME=/");
    shim::test::TempDir no_passwd("oci-");
    object["user"] = boost::json::parse(R"({"uid": 0, "gid": 0})");
    CHECK(made(process, {no_passwd.path(), {}}).request.env->back() == "HOME=/");
  }
  SECTION("no PATH in env: an empty search list (a bare args[0] is not found), env may be absent") {
    object.erase("env");
    ProcessSpawn spawn = made(process, {root.dir.path(), {}});
    CHECK(spawn.request.search_path == "");
    CHECK(*spawn.request.env == std::vector<std::string>{"HOME=/root"});
  }
  SECTION("an /etc/passwd that is a symlink resolves inside the root") {
    std::filesystem::rename(root.dir.sub("etc/passwd"), root.dir.sub("etc/passwd.real"));
    std::filesystem::create_symlink("/etc/passwd.real", root.dir.sub("etc/passwd"));
    object["user"] = boost::json::parse(R"({"uid": 1000, "gid": 0})");
    CHECK(made(process, {root.dir.path(), {}}).request.env->back() == "HOME=/home/svc");
  }
}

TEST_CASE("oci process: unknown fields are ignored, as the runtime spec asks", "[oci]") {
  boost::json::value process = default_process();
  process.as_object()["futureField"] = boost::json::parse(R"({"x": [1, 2]})");
  process.as_object()["apparmorProfile"] = "";  // empty: unset
  process.as_object()["selinuxLabel"] = nullptr;
  ProcessSpawn spawn = made(process, {});
  CHECK(spawn.request.path == "sh");
  CHECK(spawn.request.root.empty());
}

TEST_CASE("oci process: fields this runtime cannot apply are errors naming them", "[oci]") {
  struct Case {
    const char* key;
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {"apparmorProfile", R"("cri-containerd.apparmor.d")",
       "process.apparmorProfile: AppArmor profiles are not supported by this runtime: invalid "
       "argument"},
      {"selinuxLabel", R"("system_u:system_r:container_t:s0")",
       "process.selinuxLabel: SELinux labels are not supported by this runtime: invalid argument"},
      {"scheduler", R"({"policy": "SCHED_IDLE"})",
       "process.scheduler: scheduling policies are not supported by this runtime: invalid "
       "argument"},
      {"ioPriority", R"({"class": "IOPRIO_CLASS_IDLE"})",
       "process.ioPriority: I/O priorities are not supported by this runtime: invalid argument"},
      {"execCPUAffinity", R"({"initial": "0"})",
       "process.execCPUAffinity: CPU affinity is not supported by this runtime: invalid argument"},
      {"commandLine", R"("cmd /c exit")",
       "process.commandLine: a Windows field, not supported on Linux: invalid argument"},
  };
  for (const Case& c : cases) {
    INFO(c.key);
    Status status = error_of([&](auto& p) { p[c.key] = boost::json::parse(c.json); });
    CHECK(status.message() == c.message);
  }
  Status username = error_of([](auto& p) { p["user"].as_object()["username"] = "Administrator"; });
  CHECK(username.message() ==
        "process.user.username: a Windows field, not supported on Linux: invalid argument");
}

TEST_CASE("oci process: malformed values are errors naming the field", "[oci]") {
  using Edit = std::function<void(boost::json::object&)>;
  struct Case {
    Edit edit;
    const char* message;
  };
  auto set = [](const char* key, const char* json) -> Edit {
    return [=](boost::json::object& p) { p[key] = boost::json::parse(json); };
  };
  const Case cases[] = {
      {[](auto& p) { p.erase("args"); },
       "process.args: missing (at least the executable is needed)"},
      {set("args", "[]"), "process.args: empty (at least the executable is needed)"},
      {set("args", R"(["sh", 3])"), "process.args[1]: want a string, got a number"},
      {set("args", R"("sh -c true")"), "process.args: want an array of strings, got a string"},
      {set("args", R"([""])"), "process.args[0]: empty"},
      {[](auto& p) { p.erase("cwd"); }, "process.cwd: missing"},
      {set("cwd", R"("tmp")"), "process.cwd: \"tmp\" is not an absolute path"},
      {set("cwd", "7"), "process.cwd: want a string, got a number"},
      {set("env", R"(["A=1", "NOEQUALS"])"),
       "process.env[1]: invalid environment variable: missing '='"},
      {set("env", R"(["=x"])"),
       "process.env[0]: invalid environment variable: name cannot be empty"},
      {set("env", R"(["A=x\u0000y"])"),
       "process.env[0]: invalid environment variable \"A\": contains nul byte (\\x00)"},
      {set("env", R"({"A": "1"})"), "process.env: want an array of strings, got an object"},
      {set("user", R"({"uid": -1, "gid": 0})"),
       "process.user.uid: -1 is not an integer in 0..4294967295"},
      {set("user", R"({"uid": 0, "gid": 4294967296})"),
       "process.user.gid: 4294967296 is not an integer in 0..4294967295"},
      {set("user", R"({"uid": "root"})"),
       "process.user.uid: want an integer in 0..4294967295, got a string"},
      {set("user", R"({"uid": 1.5})"),
       "process.user.uid: want an integer in 0..4294967295, got a number"},
      {set("user", R"({"umask": 512})"), "process.user.umask: 512 is not an integer in 0..511"},
      {set("user", R"({"additionalGids": [1, "wheel"]})"),
       "process.user.additionalGids[1]: want an integer in 0..4294967295, got a string"},
      {set("user", R"([0, 0])"), "process.user: want an object, got an array"},
      {set("rlimits", R"([{"type": "RLIMIT_BOGUS", "hard": 1, "soft": 1}])"),
       "process.rlimits[0].type: unknown resource limit \"RLIMIT_BOGUS\""},
      {set("rlimits",
           R"([{"type": "RLIMIT_CORE", "hard": 1, "soft": 1}, {"type": "RLIMIT_CORE", "hard": 2, "soft": 2}])"),
       "process.rlimits[1].type: RLIMIT_CORE is set twice"},
      {set("rlimits", R"([{"type": "RLIMIT_NOFILE", "hard": 10, "soft": 20}])"),
       "process.rlimits[0]: RLIMIT_NOFILE: the soft limit 20 is above the hard limit 10"},
      {set("rlimits", R"([{"type": "RLIMIT_NOFILE", "soft": 20}])"),
       "process.rlimits[0].hard: missing"},
      {set("rlimits", R"([{"hard": 1, "soft": 1}])"), "process.rlimits[0].type: missing"},
      {set("rlimits", R"([{"type": "RLIMIT_NOFILE", "hard": -1, "soft": 1}])"),
       "process.rlimits[0].hard: -1 is not an integer in 0..18446744073709551615"},
      {set("rlimits", R"({"type": "RLIMIT_NOFILE"})"),
       "process.rlimits: want an array of objects, got an object"},
      {set("capabilities", R"({"bounding": ["CAP_CHOWN", "CAP_FLY"]})"),
       "process.capabilities.bounding[1]: unknown capability \"CAP_FLY\""},
      {set("capabilities", R"({"effective": ["chown"]})"),
       "process.capabilities.effective[0]: unknown capability \"chown\""},
      {set("capabilities", R"({"ambient": ["CAP_KILL"], "permitted": ["CAP_KILL"]})"),
       "process.capabilities.ambient: CAP_KILL is not both permitted and inheritable"},
      {set("capabilities", R"(["CAP_KILL"])"),
       "process.capabilities: want an object, got an array"},
      {set("oomScoreAdj", "1001"), "process.oomScoreAdj: 1001 is not an integer in -1000..1000"},
      {set("oomScoreAdj", "-1001"), "process.oomScoreAdj: -1001 is not an integer in -1000..1000"},
      {set("oomScoreAdj", R"("5")"),
       "process.oomScoreAdj: want an integer in -1000..1000, got a string"},
      {set("noNewPrivileges", "1"), "process.noNewPrivileges: want true or false, got a number"},
      {set("terminal", R"("yes")"), "process.terminal: want true or false, got a string"},
      {set("terminal", "true"),
       "process.terminal: true, but the process was given no console socket"},
  };
  for (const Case& c : cases) {
    Status status = error_of(c.edit);
    CHECK(status.message() == std::string(c.message) + ": invalid argument");
  }
  // A console socket for a process without a terminal.
  Status stray = error_of([](auto&) {}, {"", {.console_socket = "/run/x/pty.sock"}});
  CHECK(stray.message() ==
        "process.terminal: false, but the process was given a console socket: invalid argument");
}

TEST_CASE("oci process: not an object, not JSON", "[oci]") {
  ProcessSpawn spawn;
  Status status = spawn_request_from_process(boost::json::value(42), {}, &spawn);
  CHECK(status.code() == Code::kInvalidArgument);
  CHECK(status.message() == "process: want an object, got a number: invalid argument");
  status = spawn_request_from_process(std::string_view(R"({"args": ["sh")"), {}, &spawn);
  CHECK(status.code() == Code::kInvalidArgument);
  CHECK(status.message().starts_with("process: not JSON: "));
  status =
      spawn_request_from_process(std::string_view(R"({"args": ["true"], "cwd": "/"})"), {}, &spawn);
  CHECK(status.ok());
  CHECK(spawn.request.argv == std::vector<std::string>{"true"});
}

TEST_CASE("oci process: a terminal is a new pty, sized, its master sent to the console socket",
          "[oci]") {
  std::unique_ptr<shim::ConsoleSocket> socket;
  REQUIRE(shim::ConsoleSocket::create(&socket).ok());
  boost::json::value process = default_process();
  process.as_object()["terminal"] = true;
  process.as_object()["consoleSize"] = boost::json::parse(R"({"height": 33, "width": 101})");
  ProcessSpawn spawn = made(process, {"", {.console_socket = socket->path()}});
  const shim::SpawnRequest& r = spawn.request;
  REQUIRE(spawn.pty.valid());
  CHECK(spawn.console_socket == socket->path());
  CHECK(r.controlling_terminal);
  int slave = spawn.pty.slave();
  CHECK(r.fds == std::vector<std::pair<int, int>>{{0, slave}, {1, slave}, {2, slave}});
  CHECK(::isatty(slave) == 1);
  CHECK((::fcntl(slave, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK((::fcntl(spawn.pty.master(), F_GETFD) & FD_CLOEXEC) != 0);
  std::string name = spawn.pty.name();
  CHECK(name.starts_with("/dev/pts/"));
  winsize size{};
  REQUIRE(::ioctl(slave, TIOCGWINSZ, &size) == 0);
  CHECK(size.ws_row == 33);
  CHECK(size.ws_col == 101);

  struct stat slave_stat {};
  REQUIRE(::fstat(slave, &slave_stat) == 0);
  REQUIRE(spawn.send_console().ok());
  CHECK_FALSE(spawn.pty.valid());  // the shim's copies are closed
  int master = -1;
  std::string received_name;
  REQUIRE(socket->receive_fd(5s, &master, &received_name).ok());
  CHECK(received_name == name);
  // It is the master of that pty: its peer has the slave's device number.
  unsigned number = 0;
  REQUIRE(::ioctl(master, TIOCGPTN, &number) == 0);
  CHECK("/dev/pts/" + std::to_string(number) == name);
  CHECK(::close(master) == 0);

  SECTION("without consoleSize the size is left to ResizePty") {
    process.as_object().erase("consoleSize");
    ProcessSpawn unsized = made(process, {"", {.console_socket = socket->path()}});
    REQUIRE(::ioctl(unsized.pty.slave(), TIOCGWINSZ, &size) == 0);
    CHECK(size.ws_row == 0);
    CHECK(size.ws_col == 0);
  }
  SECTION("a malformed consoleSize is an error, and no pty is left open") {
    process.as_object()["consoleSize"] = boost::json::parse(R"({"height": 33})");
    ProcessSpawn bad;
    Status status =
        spawn_request_from_process(process, {"", {.console_socket = socket->path()}}, &bad);
    CHECK(status.message() == "process.consoleSize.width: missing: invalid argument");
    CHECK_FALSE(bad.pty.valid());
  }
  SECTION("a console socket nobody listens on is send_console's error") {
    ProcessSpawn orphan = made(process, {"", {.console_socket = "/nonexistent-libshim/pty.sock"}});
    Status status = orphan.send_console();
    CHECK(status.message() ==
          "connect to console socket /nonexistent-libshim/pty.sock: No such file or directory");
    CHECK_FALSE(orphan.pty.valid());
  }
}
