// shim-example's OCI process semantics end to end, under containerd 1.6, 1.7 and 2.1
// ([multi-version]): bare commands found through the spec's PATH inside a usr-merged
// rootfs (/bin -> usr/bin), an exec of a bare command, a missing one's runc-worded
// error (also without a PATH, as under runc), the spec's user, groups, umask, capabilities, rlimits
// and oomScoreAdj seen from inside, and terminals for `ctr run -t` and `ctr task exec -t`. Few
// cases on purpose: each one starts a containerd.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/containerd_fixture.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using shim::test::CommandResult;
using shim::test::PrivateContainerd;

const std::string kShimBinary =
    shim::test::shim_build_dir() + "/shim-example/containerd-shim-example-v1";
const char* const kScript = "/usr/bin/script";

std::string shim_path() { return fs::canonical(kShimBinary).string(); }

// A busybox rootfs with busybox's merged layout: everything in /usr/bin, /bin a
// relative symlink to it, and stty for the terminal cases.
std::string make_rootfs(const PrivateContainerd& fx) {
  const fs::path rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs.string());
  fs::create_directories(rootfs / "usr");
  fs::rename(rootfs / "bin", rootfs / "usr/bin");
  fs::create_symlink("usr/bin", rootfs / "bin");
  fs::create_symlink("busybox", rootfs / "usr/bin/stty");
  // A command only the container has: a lookup on the host cannot find it.
  fs::create_directories(rootfs / "usr/local/bin");
  std::ofstream(rootfs / "usr/local/bin/only-inside") << "#!/bin/sh\necho only inside \"$@\"\n";
  fs::permissions(rootfs / "usr/local/bin/only-inside", fs::perms(0755));
  return rootfs.string();
}

// containerd's default PATH (oci.WithDefaultPathEnv). ctr sets it only from an image's
// config, not for --rootfs: the tests pass it, as the conformance suite does.
const char* const kPathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// `ctr run <flags> --env PATH=... --runtime <our shim> <fifo flags> --rootfs <rootfs> <id>
// <command>`; without `with_path`, no --env.
std::vector<std::string> run_args(const PrivateContainerd& fx,
                                  const std::vector<std::string>& flags, const std::string& rootfs,
                                  const std::string& id, const std::vector<std::string>& command,
                                  bool with_path = true) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), flags.begin(), flags.end());
  if (with_path) args.insert(args.end(), {"--env", kPathEnv});
  args.insert(args.end(), {"--runtime", shim_path()});
  for (const auto& flag : fx.run_flags(/*with_runc_root=*/false)) args.push_back(flag);
  args.insert(args.end(), {"--rootfs", rootfs, id});
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

std::vector<std::string> exec_args(const PrivateContainerd& fx,
                                   const std::vector<std::string>& flags, const std::string& id,
                                   const std::vector<std::string>& command) {
  std::vector<std::string> args = {"task", "exec"};
  args.insert(args.end(), flags.begin(), flags.end());
  for (const auto& flag : fx.run_flags(false)) args.push_back(flag);
  args.push_back(id);
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

std::string shell_quote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// `ctr <args>` inside util-linux `script`, whose terminal is rows x cols (ctr -t needs
// a terminal of its own; it sends that size with ResizePty after Start).
CommandResult ctr_in_terminal(const PrivateContainerd& fx, const std::vector<std::string>& args,
                              int rows, int cols) {
  std::string command = fmt::format("stty rows {} cols {}; exec", rows, cols);
  for (const std::string& word :
       {fx.ctr_bin(), std::string("--address"), fx.grpc_address(), std::string("-n"), fx.ns()}) {
    command += " " + shell_quote(word);
  }
  for (const std::string& word : args) command += " " + shell_quote(word);
  return shim::test::run_command({kScript, "-qec", command, "/dev/null"}, {.timeout = 60s});
}

// Whether `output` (a terminal's: \r\n line ends, maybe a "^@" echoed from script's
// stdin end) has `line` as a line.
bool has_line(const std::string& output, const std::string& line) {
  std::string lines = "\n";
  for (char c : output) {
    if (c != '\r') lines += c;
  }
  return lines.find("\n" + line + "\n") != std::string::npos ||
         lines.find("^@" + line + "\n") != std::string::npos;
}

// Waits (up to 10 s) for ctr's first ResizePty, then prints the terminal's size.
const char* const kPrintSize =
    "i=0; until s=$(stty size 2>/dev/null) && [ -n \"$s\" ] && [ \"$s\" != '0 0' ]; do "
    "[ $i -ge 50 ] && break; sleep 0.2; i=$((i+1)); done; stty size";

}  // namespace

TEST_CASE("example shim: bare commands are found in the spec's PATH inside the rootfs",
          "[example-e2e][oci][multi-version][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  REQUIRE(fs::exists(kShimBinary));
  PrivateContainerd fx;
  const std::string rootfs = make_rootfs(fx);
  auto events = fx.subscribe_events();

  auto exit3 = fx.ctr(run_args(fx, {"--rm"}, rootfs, "bare3", {"sh", "-c", "exit 3"}), 30s);
  INFO(exit3.describe() << "\nlog:\n" << fx.log_tail());
  CHECK(exit3.exit_code == 3);
  auto inside = fx.ctr(run_args(fx, {"--rm"}, rootfs, "inside", {"only-inside", "a b"}), 30s);
  INFO(inside.describe());
  CHECK(inside.exit_code == 0);
  CHECK(inside.out == "only inside a b\n");
  CHECK_FALSE(fs::exists("/usr/local/bin/only-inside"));

  // A bare `cat`: stdin to stdout and back, ending with ctr's stdin. ctr sends CloseIO
  // at the end of its stdin only once its NewTask returned (cmd/ctr/commands/tasks'
  // stdinCloser): an input that fits in the pipes would end before that, and cat would
  // never see EOF. ~1 MB cannot: the process reads it only after Start.
  std::string input;
  for (int i = 0; i < 30000; ++i) input += fmt::format("line {} through a bare cat\n", i);
  auto cat = fx.ctr(run_args(fx, {"--rm"}, rootfs, "barecat", {"cat"}), 60s, input);
  INFO("cat: exit " << cat.exit_code << ", " << cat.out.size()
                    << " bytes out; stderr: " << cat.err);
  CHECK(cat.exit_code == 0);
  CHECK(cat.out.size() == input.size());
  CHECK((cat.out == input));  // not printed: 1 MB each side

  auto missing = fx.ctr(run_args(fx, {"--rm"}, rootfs, "nosuch", {"nosuch", "arg"}), 30s);
  INFO(missing.describe());
  CHECK(missing.exit_code != 0);
  CHECK(missing.err.find("exec: \"nosuch\": executable file not found in $PATH") !=
        std::string::npos);
  // No PATH in the spec's env: runc finds no bare command either (its init starts
  // with an empty environment), never the shim's own PATH.
  auto no_path =
      fx.ctr(run_args(fx, {"--rm"}, rootfs, "nopath", {"sh", "-c", "exit 0"}, false), 30s);
  INFO(no_path.describe());
  CHECK(no_path.exit_code != 0);
  CHECK(no_path.err.find("exec: \"sh\": executable file not found in $PATH") != std::string::npos);

  // A bare `sleep`, killed; a bare exec into it, and a missing one.
  fx.ctr_ok(run_args(fx, {"-d"}, rootfs, "baresleep", {"sleep", "1000"}));
  auto exec = fx.ctr(
      exec_args(fx, {"--exec-id", "e1"}, "baresleep", {"sh", "-c", "echo exec $HOME $PWD"}), 30s);
  INFO(exec.describe() << "\nlog:\n" << fx.log_tail());
  CHECK(exec.exit_code == 0);
  CHECK(exec.out == "exec /root /\n");  // HOME from the rootfs's /etc/passwd, as runc adds it
  auto exec_missing = fx.ctr(exec_args(fx, {"--exec-id", "e2"}, "baresleep", {"nosuch"}), 30s);
  INFO(exec_missing.describe());
  CHECK(exec_missing.exit_code != 0);
  CHECK(exec_missing.err.find("exec: \"nosuch\": executable file not found in $PATH") !=
        std::string::npos);
  fx.ctr_ok({"task", "kill", "-s", "KILL", "baresleep"});
  auto exit = events->wait_for_line({"/tasks/exit", "\"id\":\"baresleep\""}, 10s);
  INFO("events:\n" << events->text());
  REQUIRE(exit);
  CHECK(exit->find("\"exit_status\":137") != std::string::npos);
  fx.ctr_ok({"task", "rm", "baresleep"});
  fx.ctr_ok({"container", "rm", "baresleep"});
}

TEST_CASE("example shim: the spec's user, groups, umask, capabilities and limits",
          "[example-e2e][oci][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  PrivateContainerd fx;
  const std::string rootfs = make_rootfs(fx);
  // As containerd's default spec has it, but another user (ctr 1.6 has no --user).
  boost::json::object spec = boost::json::parse(R"({
    "ociVersion": "1.0.2",
    "process": {
      "user": {"uid": 1000, "gid": 1000, "additionalGids": [20], "umask": 23},
      "args": ["sh", "-c", "id -u; id -G; umask; touch f; stat -c %a f; ulimit -n; echo $HOME $PWD; cat /proc/self/oom_score_adj; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status"],
      "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME="],
      "cwd": "/tmp",
      "capabilities": {
        "bounding": ["CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
        "effective": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
        "permitted": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
        "inheritable": ["CAP_NET_BIND_SERVICE"],
        "ambient": ["CAP_NET_BIND_SERVICE"]
      },
      "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 512, "soft": 256}],
      "oomScoreAdj": 100,
      "noNewPrivileges": true
    },
    "root": {"path": ""},
    "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}]}
  })")
                                 .as_object();
  spec["root"].as_object()["path"] = rootfs;
  const std::string config = fx.dir() + "/user-config.json";
  std::ofstream(config) << boost::json::serialize(spec);
  std::vector<std::string> args = {"run", "--rm", "--runtime", shim_path(), "--config", config};
  for (const auto& flag : fx.run_flags(false)) args.push_back(flag);
  args.push_back("user1");
  auto run = fx.ctr(args, 30s);
  INFO(run.describe() << "\nlog:\n" << fx.log_tail());
  CHECK(run.exit_code == 0);
  CHECK(run.out ==
        "1000\n1000 20\n0027\n640\n256\n/ /tmp\n100\n"
        "CapEff:\t0000000000000400\n"
        "CapBnd:\t0000000000000421\n"
        "NoNewPrivs:\t1\n");
  CHECK(fx.ctr_ok({"containers", "ls", "-q"}).out.empty());
}

TEST_CASE("example shim: ctr run -t and ctr task exec -t get a terminal of ctr's size",
          "[example-e2e][oci][terminal][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (::access(kScript, X_OK) != 0) LIBSHIM_SKIP("util-linux script is missing");
  PrivateContainerd fx;
  const std::string rootfs = make_rootfs(fx);
  auto run = ctr_in_terminal(
      fx,
      run_args(fx, {"--rm", "-t"}, rootfs, "tty1",
               {"sh", "-c",
                std::string(kPrintSize) + "; [ -t 0 ] && echo is-a-tty; echo x > /dev/tty && "
                                          "echo has-ctty; sleep 0.3; exit 7"}),
      33, 101);
  INFO(run.describe() << "\nlog:\n" << fx.log_tail());
  CHECK(run.exit_code == 7);
  CHECK(has_line(run.out, "33 101"));
  CHECK(has_line(run.out, "is-a-tty"));
  CHECK(has_line(run.out, "has-ctty"));

  fx.ctr_ok(run_args(fx, {"-d"}, rootfs, "ttyhost", {"sleep", "1000"}));
  auto exec =
      ctr_in_terminal(fx,
                      exec_args(fx, {"-t", "--exec-id", "x1"}, "ttyhost",
                                {"sh", "-c", std::string(kPrintSize) + "; sleep 0.3; exit 3"}),
                      40, 120);
  INFO(exec.describe() << "\nlog:\n" << fx.log_tail());
  CHECK(exec.exit_code == 3);
  CHECK(has_line(exec.out, "40 120"));
  fx.ctr_ok({"task", "kill", "-s", "KILL", "ttyhost"});
}
