// Terminals (containerd runtime/v2/runc/platform.go) with our shim-runc under a real containerd: `ctr run -t`
// and `ctr task exec -t`, ResizePty from ctr and over ttrpc, and no fds or pty dirs left
// behind by many terminal containers and execs in one shim.
//
// ctr -t needs a terminal of its own: it runs under util-linux `script`, whose pty gets
// a known size first (`stty rows R cols C`). ctr sends that size with ResizePty right
// after Start, so the container polls until its size is no longer the initial 0x0.
//
// Processes linger a moment after their last output: ctr stops reading its stdout FIFO
// (cio Cancel) right after Delete, and when the process exits at once its copy goroutine
// may not have read yet; the Go shim loses such output too (seen: 2 of 360 execs).
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;
namespace task = containerd::task::v2;

const char* const kScript = "/usr/bin/script";

// Shell that waits (up to 10 s) for ctr's first ResizePty, then prints the size
// (busybox's `stty size` prints nothing but an error, and exits 0, while it is 0x0).
const char* const kLinger = "; sleep 0.3";
const char* const kPrintSize =
    "i=0; until s=$(stty size 2>/dev/null) && [ -n \"$s\" ] && [ \"$s\" != '0 0' ]; do "
    "[ $i -ge 50 ] && break; sleep 0.2; i=$((i+1)); done; stty size";

// Output with control characters visible, for failure messages.
std::string visible(const std::string& text) {
  std::string shown;
  for (unsigned char c : text) {
    if (c == '\n') {
      shown += "\\n\n";
    } else if (c < 0x20 || c == 0x7f) {
      shown += fmt::format("\\x{:02x}", c);
    } else {
      shown += static_cast<char>(c);
    }
  }
  return shown;
}

// The output with \r dropped: between the container's pty (\n -> \r\n) and us are
// ctr's and script's terminals, whose output processing varies. (`script` also sends a
// NUL when its stdin ends, which ctr forwards and the container's terminal echoes as
// "^@" somewhere in the output: so lines are searched for, not compared.)
std::string lines_of(const std::string& text) {
  std::string lines;
  for (char c : text) {
    if (c != '\r') lines += c;
  }
  return lines;
}

bool has_line(const std::string& output, const std::string& line) {
  std::string lines = "\n" + lines_of(output);
  for (std::string marker : {"\n", "^@"}) {
    if (lines.find(marker + line + "\n") != std::string::npos) return true;
  }
  return false;
}

std::string shell_quote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Sets XDG_RUNTIME_DIR for the test (containerd, hence the shim, inherit it), so the
// shim's pty* console dirs land in a private dir; restores the old value after.
class PrivateRuntimeDir {
 public:
  PrivateRuntimeDir() : dir_("xdg-") {
    if (const char* old = std::getenv("XDG_RUNTIME_DIR")) old_ = old;
    ::setenv("XDG_RUNTIME_DIR", dir_.path().c_str(), 1);
  }
  ~PrivateRuntimeDir() {
    if (old_) {
      ::setenv("XDG_RUNTIME_DIR", old_->c_str(), 1);
    } else {
      ::unsetenv("XDG_RUNTIME_DIR");
    }
  }
  const std::string& path() const { return dir_.path(); }

  // Entries named pty* (console socket dirs) present now.
  std::vector<std::string> pty_dirs() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      std::string name = entry.path().filename().string();
      if (name.rfind("pty", 0) == 0) names.push_back(name);
    }
    return names;
  }

 private:
  TempDir dir_;
  std::optional<std::string> old_;
};

struct TerminalE2e {
  TerminalE2e() {
    // busybox has stty; the shared rootfs helper does not link it.
    std::error_code ignored;
    std::filesystem::create_symlink("busybox", s.rootfs + "/bin/stty", ignored);
  }

  // `ctr <args>` run inside `script`, whose terminal is rows x cols.
  CommandResult ctr_in_terminal(const std::vector<std::string>& args, int rows, int cols,
                                std::chrono::milliseconds timeout = 60s) const {
    std::string command = fmt::format("stty rows {} cols {}; exec", rows, cols);
    for (const std::string& word : {s.fx.ctr_bin(), std::string("--address"), s.fx.grpc_address(),
                                    std::string("-n"), s.fx.ns()}) {
      command += " " + shell_quote(word);
    }
    for (const std::string& word : args) command += " " + shell_quote(word);
    return run_command({kScript, "-qec", command, "/dev/null"}, {.timeout = timeout});
  }

  PrivateRuntimeDir runtime_dir;  // before the fixture: containerd inherits it
  RuncE2e s;
};

#define SKIP_WITHOUT_SCRIPT()                                                         \
  do {                                                                                \
    if (::access(kScript, X_OK) != 0) LIBSHIM_SKIP("util-linux script is missing"); \
  } while (false)

std::size_t count_fds(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid))) {
    ++n;
  }
  return n;
}

// "fd -> target" of a process, for failure messages.
std::string fd_listing(pid_t pid) {
  std::string listing;
  for (const auto& entry : std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid))) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(entry.path(), ec);
    listing += entry.path().filename().string() + " -> " + (ec ? "?" : target.string()) + "\n";
  }
  return listing;
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool wait_file_text(const std::string& path, const std::string& text, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file_text(path) == text) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

TEST_CASE("ctr run -t gives the container a terminal of ctr's size", "[runc][terminal][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  SKIP_WITHOUT_SCRIPT();
  TerminalE2e t;
  auto run = t.ctr_in_terminal(
      t.s.run({"--rm", "-t"}, "tty1",
              {"/bin/sh", "-c",
               std::string(kPrintSize) + "; /bin/echo hello; [ -t 0 ] && echo is-a-tty" + kLinger}),
      33, 101);
  INFO(visible(run.out) << "\n" << run.err << "\n" << t.s.fx.log_tail());
  CHECK(run.exit_code == 0);
  CHECK(has_line(run.out, "33 101"));
  CHECK(has_line(run.out, "hello"));
  CHECK(has_line(run.out, "is-a-tty"));
  CHECK(t.runtime_dir.pty_dirs().empty());
}

TEST_CASE("ctr run -t returns the container's exit code", "[runc][terminal][runtime-binary]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  SKIP_WITHOUT_SCRIPT();
  TerminalE2e t;
  auto run = t.ctr_in_terminal(t.s.run({"--rm", "-t"}, "tty2", {"/bin/sh", "-c", std::string("echo bye") + kLinger + "; exit 7"}), 24, 80);
  INFO(visible(run.out));
  CHECK(run.exit_code == 7);
  CHECK(has_line(run.out, "bye"));
}

TEST_CASE("ctr task exec -t resizes the exec's terminal", "[runc][terminal][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  SKIP_WITHOUT_SCRIPT();
  TerminalE2e t;
  REQUIRE(t.s.fx.ctr_ok(t.s.run({"-d"}, "host", {"/bin/sleep", "600"})).ok());
  REQUIRE(t.s.wait_status("host", "RUNNING", 10s));
  auto exec = t.ctr_in_terminal({"task", "exec", "-t", "--exec-id", "x1", "host", "/bin/sh", "-c",
                                 std::string(kPrintSize) + kLinger + "; exit 3"},
                                40, 120);
  INFO(visible(exec.out) << "\n" << exec.err << "\n" << t.s.fx.log_tail());
  CHECK(exec.exit_code == 3);
  CHECK(has_line(exec.out, "40 120"));
  REQUIRE(t.s.fx.ctr_ok({"task", "kill", "-s", "KILL", "host"}).ok());
  REQUIRE(t.s.wait_status("host", "STOPPED", 10s));
  REQUIRE(t.s.fx.ctr_ok({"task", "rm", "host"}).ok());
}

TEST_CASE("ResizePty over ttrpc resizes a detached terminal container", "[runc][terminal][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  SKIP_WITHOUT_SCRIPT();
  TerminalE2e t;
  // The container writes its terminal size into the (host-visible) rootfs, over and over.
  const std::string loop =
      "while true; do stty size > /tmp/size.new; mv /tmp/size.new /tmp/size; sleep 0.1; done";
  auto run = t.ctr_in_terminal(t.s.run({"-d", "-t"}, "dtty", {"/bin/sh", "-c", loop}), 20, 70);
  INFO(run.describe() << "\n" << t.s.fx.log_tail());
  REQUIRE(run.exit_code == 0);
  REQUIRE(t.s.wait_status("dtty", "RUNNING", 10s));
  const std::string size_file = t.s.rootfs + "/tmp/size";
  const std::string address = t.s.fx.shim_address("dtty");
  const std::string& ns = t.s.fx.ns();

  task::StateRequest state_request;
  state_request.set_id("dtty");
  auto state = call_task_api(address, ns, "State", state_request.SerializeAsString());
  REQUIRE(state.status.ok());
  task::StateResponse state_response;
  REQUIRE(state_response.ParseFromString(state.payload));
  CHECK(state_response.terminal());

  for (auto [width, height] : {std::pair{77, 22}, std::pair{132, 50}}) {
    task::ResizePtyRequest resize;
    resize.set_id("dtty");
    resize.set_width(static_cast<std::uint32_t>(width));
    resize.set_height(static_cast<std::uint32_t>(height));
    auto result = call_task_api(address, ns, "ResizePty", resize.SerializeAsString());
    INFO(result.status.to_string());
    REQUIRE(result.status.ok());
    std::string want = fmt::format("{} {}\n", height, width);
    CHECK(wait_file_text(size_file, want, 10s));
    INFO("last size: " << read_file_text(size_file));
  }

  task::ResizePtyRequest unknown;
  unknown.set_id("nope");
  auto missing = call_task_api(address, ns, "ResizePty", unknown.SerializeAsString());
  CHECK(missing.status.code() == Code::kNotFound);
  CHECK(missing.status.message() == "container not created: not found");
  unknown.set_id("dtty");
  unknown.set_exec_id("no-exec");
  auto missing_exec = call_task_api(address, ns, "ResizePty", unknown.SerializeAsString());
  CHECK(missing_exec.status.code() == Code::kNotFound);

  REQUIRE(t.s.fx.ctr_ok({"task", "kill", "-s", "KILL", "dtty"}).ok());
  REQUIRE(t.s.wait_status("dtty", "STOPPED", 10s));
  REQUIRE(t.s.fx.ctr_ok({"task", "rm", "dtty"}).ok());
  CHECK(t.runtime_dir.pty_dirs().empty());
}

// One shim for everything: a long-running container plus terminal containers in its
// group (each `ctr run --rm -t`) and terminal execs into it.
TEST_CASE("terminal containers and execs leave no fds or pty dirs in the shim",
          "[runc][terminal][runtime-binary]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  SKIP_WITHOUT_SCRIPT();
  TerminalE2e t;
  const std::vector<std::string> group = {"--annotation", "io.containerd.runc.v2.group=ttys"};
  std::vector<std::string> host_flags = {"-d"};
  host_flags.insert(host_flags.end(), group.begin(), group.end());
  REQUIRE(t.s.fx.ctr_ok(t.s.run(host_flags, "host", {"/bin/sleep", "600"})).ok());
  REQUIRE(t.s.wait_status("host", "RUNNING", 10s));
  auto connected = connect_task(t.s.fx.shim_address("host"), t.s.fx.ns(), "host");
  REQUIRE(connected);
  const pid_t shim = static_cast<pid_t>(connected->shim_pid());
  // The shim puts its pty* dirs where we look for them.
  std::string shim_env = read_file_text(fmt::format("/proc/{}/environ", shim));
  REQUIRE(shim_env.find("XDG_RUNTIME_DIR=" + t.runtime_dir.path() + '\0') != std::string::npos);

  std::vector<std::string> tty_flags = {"--rm", "-t"};
  tty_flags.insert(tty_flags.end(), group.begin(), group.end());
  auto cycle = [&](int i) {
    auto exec = t.ctr_in_terminal({"task", "exec", "-t", "--exec-id", fmt::format("e{}", i), "host",
                                   "/bin/sh", "-c", fmt::format("echo exec-{}{}", i, kLinger)},
                                  24, 80);
    INFO(visible(exec.out));
    REQUIRE(exec.exit_code == 0);
    CHECK(has_line(exec.out, fmt::format("exec-{}", i)));
    auto run = t.ctr_in_terminal(t.s.run(tty_flags, fmt::format("c{}", i), {"/bin/sh", "-c", fmt::format("echo run-{}{}", i, kLinger)}),
                                 24, 80);
    INFO(visible(run.out));
    REQUIRE(run.exit_code == 0);
    CHECK(has_line(run.out, fmt::format("run-{}", i)));
  };
  cycle(0);  // warm-up: pool threads, lazily opened fds
  // The grouped containers ran in the same shim.
  CHECK(live_shims(our_runc_shim(), t.s.fx.ns()) == std::vector<pid_t>{shim});
  const std::size_t baseline = count_fds(shim);
  constexpr int kCycles = 10;
  for (int i = 1; i <= kCycles; ++i) cycle(i);
  // The last exit's cleanup may trail ctr by a moment.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (count_fds(shim) != baseline && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  INFO("shim fds now:\n" << fd_listing(shim));
  CHECK(count_fds(shim) == baseline);
  CHECK(fd_listing(shim).find("ptmx") == std::string::npos);
  CHECK(t.runtime_dir.pty_dirs().empty());
  CHECK(live_shims(our_runc_shim(), t.s.fx.ns()) == std::vector<pid_t>{shim});

  // The count does see a console: a live terminal exec holds fds (master, FIFOs) until
  // it is deleted.
  auto live = t.ctr_in_terminal({"task", "exec", "-d", "-t", "--exec-id", "live", "host", "/bin/sleep", "600"},
                                24, 80);
  INFO(visible(live.out) << live.err);
  REQUIRE(live.exit_code == 0);
  CHECK(count_fds(shim) > baseline);
  CHECK(fd_listing(shim).find("ptmx") != std::string::npos);
  REQUIRE(t.s.fx.ctr_ok({"task", "kill", "--exec-id", "live", "-s", "KILL", "host"}).ok());
  // ctr exits with the deleted exec's status (137); before the exit is seen the delete
  // is refused (running).
  auto removed = t.s.fx.ctr({"task", "delete", "--exec-id", "live", "host"});
  for (int i = 0; i < 50 && removed.exit_code != 137; ++i) {
    std::this_thread::sleep_for(100ms);
    removed = t.s.fx.ctr({"task", "delete", "--exec-id", "live", "host"});
  }
  INFO(removed.describe());
  REQUIRE(removed.exit_code == 137);
  deadline = std::chrono::steady_clock::now() + 5s;
  while (count_fds(shim) != baseline && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK(count_fds(shim) == baseline);
  CHECK(t.runtime_dir.pty_dirs().empty());

  REQUIRE(t.s.fx.ctr_ok({"task", "kill", "-s", "KILL", "host"}).ok());
  REQUIRE(t.s.wait_status("host", "STOPPED", 10s));
  REQUIRE(t.s.fx.ctr_ok({"task", "rm", "host"}).ok());
}

}  // namespace
}  // namespace shim::test

