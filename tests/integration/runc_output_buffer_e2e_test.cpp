// Output buffering end to end (docs/output-buffering.md): a container under our shim
// (ctr run -d, runc, busybox) writes numbered lines as fast as it can into its stdout
// FIFO, read by a consumer we control (as containerd's CRI reads it); containerd is
// killed (-9) and the consumer stops reading, for LIBSHIM_OUTPUT_AWAY_SECONDS (default
// 3; 60 by hand) or until the container wrote 30,000 more lines; then containerd comes
// back and a new reader opens the FIFO (as CRI does after a restart), or `ctr task attach`
// itself is that reader.
//   - default policy (block) with a 64 KiB memory tier and the 64 MiB spill file: the
//     container kept writing while nobody read (without the buffer it blocks after the
//     pipe and the FIFO, ~128 KiB, i.e. ~12,000 lines), and the two readers together got
//     every line in order, exactly once;
//   - block with a 64 KiB bound and no spill: the writer stalls, nothing is lost;
//   - drop with a 64 KiB bound and no spill: the writer never stalls; what was delivered
//     is in order, once, and delivered + dropped (the shim's log line) = written.
//   - the same, default policy, with `ctr task attach` as the reader after the restart.
// Prints "LIBSHIM-OUTPUT: ..." lines with the figures.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/wait_until.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

// Waits for /tmp/go, then writes line-0, line-1, ... until /tmp/stop exists, then END.
// /tmp/progress holds the number of lines written: every 100 lines (rewriting a file on
// every line costs ~3 ms here, ext4 flushing at each truncate) and exactly at the end.
constexpr const char* kWriter =
    "while [ ! -e /tmp/go ]; do sleep 0.05; done; i=0; "
    "while [ ! -e /tmp/stop ]; do echo line-$i; i=$((i+1)); "
    "[ $((i % 100)) -eq 0 ] && echo $i > /tmp/progress; done; "
    "echo $i > /tmp/progress; echo END";

std::chrono::seconds away_time() {
  const char* text = std::getenv("LIBSHIM_OUTPUT_AWAY_SECONDS");
  return std::chrono::seconds(text != nullptr ? std::atoi(text) : 3);
}

std::string find_fifo(const std::string& dir, const std::string& name) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename() == name) return entry.path().string();
  }
  return "";
}

// A consumer of the stdout FIFO on its own thread: reads until stop() (then closes the
// FIFO: nobody reads any more) or EOF.
class FifoConsumer {
 public:
  explicit FifoConsumer(std::string path) : path_(std::move(path)) {
    thread_ = std::thread([this] { run(); });
  }
  ~FifoConsumer() { stop(); }
  // Stops reading and returns what was read.
  std::string stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    return text_;
  }
  // Waits for EOF (the shim closed the FIFO); false on timeout.
  bool wait_eof(std::chrono::milliseconds timeout) {
    return wait_until([&] { return eof_.load(); }, timeout);
  }
  std::size_t size() const { return size_.load(); }
  int opened() const { return opened_.load(); }

 private:
  void run() {
    int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    opened_.store(fd < 0 ? -errno : 1);
    if (fd < 0) return;
    char chunk[65536];
    while (!stop_.load()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n > 0) {
        text_.append(chunk, static_cast<std::size_t>(n));
        size_.store(text_.size());
      } else if (n == 0 && (p.revents & POLLHUP) != 0) {
        eof_.store(true);
        break;
      }
    }
    ::close(fd);
  }

  std::string path_;
  std::string text_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> eof_{false};
  std::atomic<std::size_t> size_{0};
  std::atomic<int> opened_{0};
  std::thread thread_;
};

long progress(const RuncE2e& s) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::ifstream in(s.rootfs + "/tmp/progress");
    long value = -1;
    if (in >> value) return value;
    std::this_thread::sleep_for(2ms);  // caught between truncate and write
  }
  return -1;
}

// The lines of `text` (without their '\n'); a last line without one is kept too.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::uint64_t bytes_of_lines(long count) {
  std::uint64_t total = 0;
  for (long i = 0; i < count; ++i) total += 6 + std::to_string(i).size();  // "line-" + i + '\n'
  return total;
}

struct Run {
  std::string first;   // read before containerd went away
  std::string second;  // read after it came back, to EOF
  long progress_when_gone = 0;
  long progress_before_return = 0;
  long lines_written = 0;  // at the end
  std::string log;         // containerd's log (the shim's lines)
};

enum class Reader { kFifo, kCtrAttach };

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// After the restart, `ctr task attach <id>` reads the FIFOs to the task's exit: returns
// its stdout. It is seen reading (its output grows) before the writer is told to stop.
std::string read_through_attach(RuncE2e& s, const std::string& id) {
  TempDir dir("attach-");
  const std::string out = dir.path() + "/stdout";
  ChildProcess attach(
      {s.fx.ctr_bin(), "--address", s.fx.grpc_address(), "-n", s.fx.ns(), "task", "attach", id},
      {.stdout_path = out, .stderr_path = dir.path() + "/stderr"});
  auto size = [&] {
    std::error_code ec;
    auto n = std::filesystem::file_size(out, ec);
    return ec ? 0 : n;
  };
  REQUIRE(wait_until([&] { return size() > 0; }, 20s));
  std::this_thread::sleep_for(500ms);
  std::ofstream(s.rootfs + "/tmp/stop") << "stop";
  std::optional<int> status = attach.wait_for(60s);
  INFO("ctr task attach stderr: " << read_text(dir.path() + "/stderr"));
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  return read_text(out);
}

// The scenario of the file comment; `stalls`: wait for the writer to stall while
// containerd is away instead of for it to write 30,000 lines.
Run run_scenario(RuncE2e& s, const std::string& id, const std::vector<std::string>& annotations,
                 bool stalls, Reader reader = Reader::kFifo) {
  std::vector<std::string> flags = {"-d"};
  for (const auto& a : annotations) flags.insert(flags.end(), {"--annotation", a});
  s.fx.ctr_ok(s.run(flags, id, {"/bin/sh", "-c", kWriter}));
  REQUIRE(s.wait_status(id, "RUNNING", 10s));
  std::string fifo = find_fifo(s.fx.fifo_dir(), id + "-stdout");
  REQUIRE(!fifo.empty());
  Run run;
  {
    FifoConsumer first(fifo);
    std::ofstream(s.rootfs + "/tmp/go") << "go";
    bool started = wait_until([&] { return first.size() > 100'000; }, 20s);
    INFO("fifo " << fifo << " read " << first.size() << " progress " << progress(s) << " opened "
                 << first.opened() << "\n"
                 << s.fx.log_tail(20));
    REQUIRE(started);
    s.fx.kill9();
    REQUIRE(wait_until([&] { return !s.fx.running(); }, 10s));
    run.first = first.stop();  // nobody reads the FIFO from now on
  }
  run.progress_when_gone = progress(s);
  const auto left = std::chrono::steady_clock::now();
  if (stalls) {
    long last = -1;
    auto still_since = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - left < 30s) {
      std::this_thread::sleep_for(100ms);
      long now = progress(s);
      if (now != last) {
        last = now;
        still_since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - still_since >= 1s &&
                 std::chrono::steady_clock::now() - left >= away_time()) {
        break;
      }
    }
  } else {
    wait_until(
        [&] {
          return std::chrono::steady_clock::now() - left >= away_time() &&
                 progress(s) - run.progress_when_gone >= 30'000;
        },
        away_time() + 30s);
  }
  run.progress_before_return = progress(s);

  s.fx.start();
  CHECK(s.task_status(id) == "RUNNING");  // containerd found the task again
  if (reader == Reader::kCtrAttach) {
    run.second = read_through_attach(s, id);
  } else {
    FifoConsumer second(fifo);  // the reader after the restart
    REQUIRE(wait_until([&] { return second.size() > 0; }, 20s));
    std::this_thread::sleep_for(500ms);
    std::ofstream(s.rootfs + "/tmp/stop") << "stop";
    REQUIRE(second.wait_eof(60s));
    run.second = second.stop();
  }
  // `ctr task attach` deletes the task once it has exited; the FIFO reader leaves it STOPPED.
  bool stopped = reader == Reader::kCtrAttach
                     ? wait_until([&] { return s.task_status(id).empty(); }, 20s)
                     : s.wait_status(id, "STOPPED", 20s);
  INFO("second reader: " << run.second.size() << " bytes, ending \""
                         << run.second.substr(run.second.size() -
                                              std::min<std::size_t>(run.second.size(), 40))
                         << "\"; tasks: " << s.fx.ctr({"task", "ls"}).out << "\n"
                         << s.fx.log_tail(20));
  REQUIRE(stopped);
  run.lines_written = progress(s);
  std::ifstream log(s.fx.log_path());
  std::stringstream text;
  text << log.rdbuf();
  run.log = text.str();
  return run;
}

// Every line-N from 0 to written-1, in order, once, then END.
void check_complete(const std::vector<std::string>& lines, long written) {
  REQUIRE(lines.size() == static_cast<std::size_t>(written) + 1);
  for (long i = 0; i < written; ++i) {
    if (lines[static_cast<std::size_t>(i)] != fmt::format("line-{}", i)) {
      FAIL(fmt::format("line {} is \"{}\"", i, lines[static_cast<std::size_t>(i)]));
    }
  }
  CHECK(lines.back() == "END");
}

TEST_CASE(
    "output: the container writes on while containerd is away, the reader after the "
    "restart gets every line in order, once",
    "[output-buffer][fault][runc-e2e][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  Run run = run_scenario(s, "obuf-block", {"io.libshim.output.buffer-bytes=64Ki"}, false);
  const long away_lines = run.progress_before_return - run.progress_when_gone;
  WARN(fmt::format(
      "LIBSHIM-OUTPUT: block-spill containerd={} away_s={} lines_while_away={} "
      "bytes_while_away={} lines_total={} first_reader_bytes={} second_reader_bytes={}",
      s.fx.version().text, away_time().count(), away_lines,
      bytes_of_lines(run.progress_before_return) - bytes_of_lines(run.progress_when_gone),
      run.lines_written, run.first.size(), run.second.size()));
  // Without the buffer the writer blocks after ~128 KiB (~12,000 lines).
  CHECK(away_lines >= 30'000);
  check_complete(lines_of(run.first + run.second), run.lines_written);
  CHECK(run.log.find("dropping output") == std::string::npos);
}

TEST_CASE(
    "output: `ctr task attach` after the restart gets every line written while containerd "
    "was away, in order, once",
    "[output-buffer][fault][runc-e2e][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  Run run = run_scenario(s, "obuf-attach", {}, false, Reader::kCtrAttach);
  const long away_lines = run.progress_before_return - run.progress_when_gone;
  WARN(fmt::format(
      "LIBSHIM-OUTPUT: attach containerd={} away_s={} lines_while_away={} lines_total={} "
      "first_reader_bytes={} attach_bytes={}",
      s.fx.version().text, away_time().count(), away_lines, run.lines_written, run.first.size(),
      run.second.size()));
  CHECK(away_lines >= 30'000);
  check_complete(lines_of(run.first + run.second), run.lines_written);
}

TEST_CASE(
    "output: block at a small bound stalls the writer while containerd is away and "
    "loses nothing",
    "[output-buffer][fault][runc-e2e][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  Run run = run_scenario(s, "obuf-stall",
                         {"io.libshim.output.buffer-bytes=64Ki", "io.libshim.output.spill-bytes=0",
                          "io.libshim.output.overflow=block"},
                         true);
  const std::uint64_t away_bytes =
      bytes_of_lines(run.progress_before_return) - bytes_of_lines(run.progress_when_gone);
  WARN(fmt::format("LIBSHIM-OUTPUT: block-64KiB containerd={} bytes_while_away={} lines_total={}",
                   s.fx.version().text, away_bytes, run.lines_written));
  // Stalled: the pipe, the FIFO (part of it unread already) and the 64 KiB buffer.
  CHECK(away_bytes <= 4 * 65536);
  check_complete(lines_of(run.first + run.second), run.lines_written);
}

TEST_CASE(
    "output: drop at a small bound never stalls the writer, delivered lines are in "
    "order, once, and the shim counts what it dropped",
    "[output-buffer][fault][runc-e2e][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  Run run = run_scenario(s, "obuf-drop",
                         {"io.libshim.output.buffer-bytes=64Ki", "io.libshim.output.spill-bytes=0",
                          "io.libshim.output.overflow=drop"},
                         false);
  const long away_lines = run.progress_before_return - run.progress_when_gone;
  const std::string delivered = run.first + run.second;
  const std::uint64_t written = bytes_of_lines(run.lines_written) + 4;  // + "END\n"
  REQUIRE(written >= delivered.size());
  const std::uint64_t dropped = written - delivered.size();
  WARN(
      fmt::format("LIBSHIM-OUTPUT: drop-64KiB containerd={} lines_while_away={} lines_total={} "
                  "delivered_bytes={} dropped_bytes={}",
                  s.fx.version().text, away_lines, run.lines_written, delivered.size(), dropped));
  CHECK(away_lines >= 30'000);
  CHECK(dropped > 0);
  // The shim's count equals ours: every byte written was delivered or counted as dropped.
  std::smatch match;
  std::regex resumed(R"(output delivery resumed after dropping output.*dropped_total_bytes=(\d+))");
  std::uint64_t logged = 0;
  for (auto it = std::sregex_iterator(run.log.begin(), run.log.end(), resumed);
       it != std::sregex_iterator(); ++it) {
    logged = std::stoull((*it)[1]);
  }
  INFO(s.fx.log_tail(30));
  CHECK(logged == dropped);
  // In order and once: line numbers rise; a drop may cut a line at each end of an
  // episode (at most a couple of malformed or merged lines per episode).
  std::vector<std::string> lines = lines_of(delivered);
  REQUIRE(!lines.empty());
  CHECK(lines.back() == "END");
  long last = -1;
  int odd = 0;
  std::regex numbered(R"(line-(\d+))");
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (!std::regex_match(lines[i], match, numbered) || std::stol(match[1]) <= last) {
      ++odd;
      continue;
    }
    last = std::stol(match[1]);
  }
  const auto episodes = std::count_if(std::sregex_iterator(run.log.begin(), run.log.end(), resumed),
                                      std::sregex_iterator(), [](const auto&) { return true; });
  CHECK(odd <= 2 * std::max<long>(1, episodes));
  CHECK(last == run.lines_written - 1);  // the end arrived after the drop
}

}  // namespace
}  // namespace shim::test
