// binary:// and binary-v2:// stdio loggers (`ctr run --log-uri ...`) through shim-runc under
// a real containerd, and the same logger under the Go shim for comparison. The logger is a
// shell script that records its argv, environment, both streams and the SIGTERM it gets.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support/containerd_fixture.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

const std::string kOurShimDir = shim::test::shim_build_dir() + "/shim-runc";

enum class Shim { kOurs, kGo };

// Copies fd 3/4 into files, says ready with a byte (what the logging library's ready()
// does in 2.3+; a 1.6 library closes fd 5 instead), runs until SIGTERM.
const char* kLoggerScript = R"(#!/bin/sh
d=${0%/*}
echo $$ > "$d/pid"
for a in "$0" "$@"; do printf '%s\n' "$a"; done > "$d/argv"
/bin/tr '\0' '\n' < /proc/$$/environ > "$d/env"
trap 'echo TERM > "$d/term"; exit 0' TERM
/bin/cat <&3 > "$d/stdout" 4<&- 5>&- &
/bin/cat <&4 > "$d/stderr" 3<&- 5>&- &
exec 3<&- 4<&-
printf R >&5
exec 5>&-
while :; do /bin/sleep 0.05; done
)";

// Closes fd 5 without a byte: ready for binary://, a failure for binary-v2://.
const char* kNoByteLogger = R"(#!/bin/sh
exec 5>&-
exec /bin/sleep 30
)";

// Container output: 300 numbered lines on each stream.
const std::vector<std::string> kPrinter = {
    "/bin/sh", "-c", "i=0; while [ $i -lt 300 ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done"};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// 'R', 'S', 'Z', ... or 0 when the process is gone.
char process_state(pid_t pid) {
  std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
  auto close = stat.rfind(')');
  if (close == std::string::npos || stat.size() <= close + 2) return 0;
  return stat[close + 2];
}

pid_t parent_of(pid_t pid) {
  std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
  auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  char state = 0;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

std::string expected_stream(const char* prefix) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += fmt::format("{} {}\n", prefix, i);
  return text;
}

struct Setup {
  explicit Setup(Shim shim) : fx(options(shim)), rootfs(fx.dir() + "/rootfs") { make_busybox_rootfs(rootfs); }

  static ContainerdOptions options(Shim shim) {
    ContainerdOptions o;
    if (shim == Shim::kOurs) o.path_prepend = {kOurShimDir};
    return o;
  }

  // A fresh dir holding `script` as <dir>/logger; returns the dir.
  std::string logger_dir(const std::string& name, const char* script) const {
    std::string dir = fx.dir() + "/" + name;
    ::mkdir(dir.c_str(), 0755);
    std::string path = dir + "/logger";
    {
      std::ofstream out(path);
      out << script;
    }
    ::chmod(path.c_str(), 0755);
    return dir;
  }

  std::vector<std::string> run(const std::string& log_uri, const std::string& id,
                               const std::vector<std::string>& cmd) const {
    std::vector<std::string> args = {"run", "-d", "--log-uri", log_uri};
    for (const auto& f : fx.run_flags()) args.push_back(f);
    args.insert(args.end(), {"--rootfs", rootfs, id});
    args.insert(args.end(), cmd.begin(), cmd.end());
    return args;
  }

  std::string task_status(const std::string& id) const {
    std::istringstream lines(fx.ctr({"task", "ls"}).out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string name, pid, status;
      words >> name >> pid >> status;
      if (name == id) return status;
    }
    return "";
  }

  PrivateContainerd fx;
  std::string rootfs;
};

// What one run through a shim left behind.
struct Observed {
  std::string create_error;  // ctr's stderr when `ctr run` failed
  std::vector<std::string> argv;
  std::string env;
  std::string out;
  std::string err;
  bool alive_until_delete = false;  // running, no SIGTERM yet, while the task was stopped
  bool parent_is_shim = false;
  bool term_when_delete_returned = false;  // Delete waited for the logger's exit
  bool term_after_delete = false;
  bool gone_after_delete = false;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

Observed run_logged(Setup& s, const std::string& scheme, const std::string& id) {
  Observed o;
  std::string dir = s.logger_dir(id, kLoggerScript);
  std::string uri = fmt::format("{}://{}/logger?key=value&alpha=1&zeta=two+words", scheme, dir);
  auto run = s.fx.ctr(s.run(uri, id, kPrinter));
  if (!run.ok()) {
    o.create_error = run.err;
    return o;
  }
  // The container exits on its own; the logger must outlive it until the task is deleted.
  if (!eventually([&] { return s.task_status(id) == "STOPPED"; }, 20s)) return o;
  eventually([&] { return read_text(dir + "/stdout") == expected_stream("out") &&
                          read_text(dir + "/stderr") == expected_stream("err"); }, 5s);
  pid_t pid = static_cast<pid_t>(std::atoi(read_text(dir + "/pid").c_str()));
  if (pid <= 0) return o;
  std::this_thread::sleep_for(200ms);
  char state = process_state(pid);
  o.alive_until_delete = state != 0 && state != 'Z' && ::access((dir + "/term").c_str(), F_OK) != 0;
  std::string shim_exe = fmt::format("/proc/{}/exe", parent_of(pid));
  char target[4096] = {};
  ssize_t n = ::readlink(shim_exe.c_str(), target, sizeof target - 1);
  o.parent_is_shim = n > 0 && std::string(target, static_cast<std::size_t>(n)).ends_with("/containerd-shim-runc-v2");

  s.fx.ctr_ok({"task", "rm", id});
  o.term_when_delete_returned = read_text(dir + "/term") == "TERM\n";
  o.term_after_delete = eventually([&] { return read_text(dir + "/term") == "TERM\n"; }, 15s);
  o.gone_after_delete = eventually([&] {
    char st = process_state(pid);
    return st == 0 || st == 'Z';
  }, 15s);
  s.fx.ctr({"container", "rm", id});

  o.argv = lines_of(read_text(dir + "/argv"));
  o.env = read_text(dir + "/env");
  o.out = read_text(dir + "/stdout");
  o.err = read_text(dir + "/stderr");
  return o;
}

// The argv without argv[0], as sorted (key, value) pairs (Go passes them in map order).
std::vector<std::pair<std::string, std::string>> sorted_pairs(const std::vector<std::string>& argv) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 1; i + 1 < argv.size(); i += 2) pairs.emplace_back(argv[i], argv[i + 1]);
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

TEST_CASE("binary:// logger gets both streams and its argv and env and stops after task delete",
          "[runc][binary-logger][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s(Shim::kOurs);
  for (const char* scheme : {"binary", "binary-v2"}) {
    INFO("scheme " << scheme);
    std::string id = fmt::format("log-{}", scheme);
    Observed o = run_logged(s, scheme, id);
    REQUIRE(o.create_error.empty());
    std::string logger = fmt::format("{}/{}/logger", s.fx.dir(), id);
    CHECK(o.argv == std::vector<std::string>{logger, "key", "value", "alpha", "1", "zeta", "two words"});
    CHECK(o.env == fmt::format("CONTAINER_ID={}\nCONTAINER_NAMESPACE={}\n", id, s.fx.ns()));
    CHECK(o.out == expected_stream("out"));
    CHECK(o.err == expected_stream("err"));
    CHECK(o.alive_until_delete);
    CHECK(o.parent_is_shim);
    CHECK(o.term_when_delete_returned);
    CHECK(o.term_after_delete);
    CHECK(o.gone_after_delete);
  }
}

TEST_CASE("binary-v2:// fails the create when the logger closes fd 5 without a byte",
          "[runc][binary-logger][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Setup s(Shim::kOurs);
  std::string dir = s.logger_dir("nobyte", kNoByteLogger);
  auto v2 = s.fx.ctr(s.run(fmt::format("binary-v2://{}/logger", dir), "nobyte2", {"/bin/true"}));
  CHECK(v2.exit_code != 0);
  CHECK(v2.err.find("failed to create init process I/O: logging binary did not call ready") != std::string::npos);
  CHECK(s.task_status("nobyte2").empty());
  s.fx.ctr({"container", "rm", "nobyte2"});
  // The same logger is ready by EOF for binary://.
  auto v1 = s.fx.ctr(s.run(fmt::format("binary://{}/logger", dir), "nobyte1", {"/bin/true"}));
  CHECK(v1.ok());
  CHECK(eventually([&] { return s.task_status("nobyte1") == "STOPPED"; }, 20s));
  s.fx.ctr({"task", "rm", "nobyte1"});
  s.fx.ctr({"container", "rm", "nobyte1"});
}

TEST_CASE("binary:// logger receives the same bytes argv and env as under the Go shim",
          "[runc][binary-logger][runtime-binary]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  Observed ours;
  Observed go;
  {
    Setup s(Shim::kOurs);
    ours = run_logged(s, "binary", "cmp");
  }
  {
    Setup s(Shim::kGo);
    go = run_logged(s, "binary", "cmp");
  }
  REQUIRE(ours.create_error.empty());
  REQUIRE(go.create_error.empty());
  CHECK(ours.out == go.out);
  CHECK(ours.err == go.err);
  CHECK(ours.out == expected_stream("out"));
  CHECK(ours.err == expected_stream("err"));
  // Same pairs (Go's order is random), same environment apart from the namespace name.
  CHECK(sorted_pairs(ours.argv) == sorted_pairs(go.argv));
  CHECK(lines_of(ours.env).size() == lines_of(go.env).size());
  CHECK(lines_of(ours.env).at(0) == lines_of(go.env).at(0));  // CONTAINER_ID=cmp
  CHECK(ours.alive_until_delete == go.alive_until_delete);
  CHECK(ours.term_after_delete == go.term_after_delete);
  CHECK(ours.term_when_delete_returned == go.term_when_delete_returned);
  CHECK(ours.gone_after_delete == go.gone_after_delete);
}

// An exec's logger: CONTAINER_ID is the exec id (the Go shim passes the process's own id),
// and `ctr task exec` deleting the exec stops it.
TEST_CASE("an exec with a binary:// logger behaves as under the Go shim",
          "[runc][binary-logger][runtime-binary]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  struct ExecObserved {
    int exit_code = -1;
    std::string err;
    std::string env;
    std::string out_file;
    std::string err_file;
    bool term = false;
  };
  auto observe = [](Shim shim) {
    Setup s(shim);
    ExecObserved o;
    std::vector<std::string> run = {"run", "-d"};
    for (const auto& f : s.fx.run_flags()) run.push_back(f);
    run.insert(run.end(), {"--rootfs", s.rootfs, "host", "/bin/sleep", "600"});
    s.fx.ctr_ok(run);
    std::string dir = s.logger_dir("exec-logger", kLoggerScript);
    // ctr refuses --log-uri together with --fifo-dir.
    auto exec = s.fx.ctr({"task", "exec", "--exec-id", "e1", "--log-uri",
                          fmt::format("binary://{}/logger?x=y", dir), "host", "/bin/sh", "-c",
                          "echo exec-out; echo exec-err >&2; exit 7"});
    o.exit_code = exec.exit_code;
    o.err = exec.err;
    o.term = eventually([&] { return read_text(dir + "/term") == "TERM\n"; }, 15s);
    o.env = read_text(dir + "/env");
    o.out_file = read_text(dir + "/stdout");
    o.err_file = read_text(dir + "/stderr");
    s.fx.ctr({"task", "kill", "-s", "KILL", "host"});
    return o;
  };
  ExecObserved ours = observe(Shim::kOurs);
  ExecObserved go = observe(Shim::kGo);
  INFO("ours: " << ours.err << "\ngo: " << go.err);
  CHECK(ours.exit_code == 7);
  CHECK(ours.exit_code == go.exit_code);
  CHECK(lines_of(ours.env).at(0) == "CONTAINER_ID=e1");
  CHECK(lines_of(ours.env).at(0) == lines_of(go.env).at(0));
  CHECK(ours.out_file == "exec-out\n");
  CHECK(ours.err_file == "exec-err\n");
  CHECK(ours.out_file == go.out_file);
  CHECK(ours.err_file == go.err_file);
  CHECK(ours.term);
  CHECK(ours.term == go.term);
}

}  // namespace
}  // namespace shim::test
