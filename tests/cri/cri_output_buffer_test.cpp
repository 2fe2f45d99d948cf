// Output buffering under CRI (docs/output-buffering.md): containerd is killed (-9) while
// its pods' containers write numbered lines at ~1 MiB/s; they go on writing while it is
// away, and once it is started again CRI reattaches to their FIFOs and each log file holds
// every line, in order, exactly once. The Go shim's container, beside ours, stops in
// write() once its pipe and FIFO are full (~128 KiB) until containerd is back: its figures
// are printed (LIBSHIM-OUTPUT-CRI lines), not asserted, as they are the reference's.
//
// Each writer pauses, on the test's word, just before the kill, until CRI has written
// every line so far: containerd's own reader holds up to ~36 KiB it has read and not yet
// written (its bufio.Reader and io.Copy buffers), lost when it is killed, whatever the
// shim; the pause keeps that loss out of what this test measures. The writer resumes as
// containerd dies. LIBSHIM_OUTPUT_AWAY_SECONDS sets the time away (default 6; 60 by hand).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_pod.h"
#include "support/wait_until.h"

namespace shim::test::cri {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// 100 lines of kLineBytes, their count to /out/progress, 10 ms of sleep: ~1 MiB/s. At
// /out/pause it reports the count in /out/paused and waits; at /out/stop it ends with END.
const std::string kPad(120, 'x');
const std::size_t kLineBytes = kPad.size() + 16;  // "line-%09d " + pad + "\n" = 136
const std::string kWriter = fmt::format(
    "i=0; while [ ! -e /out/stop ]; do "
    "if [ -e /out/pause ]; then echo $i > /out/paused; "
    "while [ -e /out/pause ]; do usleep 5000; done; fi; "
    "j=0; while [ $j -lt 100 ]; do printf 'line-%09d {}\\n' $i; i=$((i+1)); j=$((j+1)); done; "
    "echo $i > /out/progress; usleep 10000; done; echo $i > /out/progress; echo END",
    kPad);

std::string line(std::size_t i) { return fmt::format("line-{:09d} {}\n", i, kPad); }

std::chrono::seconds away_time() {
  const char* text = std::getenv("LIBSHIM_OUTPUT_AWAY_SECONDS");
  return std::chrono::seconds(text != nullptr ? std::atoi(text) : 6);
}

// -1 while the file is missing or being rewritten.
long read_count(const std::string& path) {
  std::ifstream in(path);
  long value = -1;
  if (!(in >> value)) return -1;
  return value;
}

struct Writer {
  Side side;
  Pod pod;
  v1::ContainerConfig config;
  std::string id;
  std::string out;  // the host dir mounted at /out
  long paused_at = -1;
  long count_after_away = -1;
  long last_count = -1;
  Clock::time_point moved_at;
  Clock::duration longest_stall{};
};

Writer start_writer(CriEnv& env, Side side) {
  Writer w{.side = side};
  w.out = fmt::format("{}/out-{}", env.work_dir(), side_name(side));
  std::filesystem::create_directories(w.out);
  ::chmod(w.out.c_str(), 0777);
  w.pod = run_pod(env, side, "outbuf");
  w.config = container_config("writer", {"/bin/sh", "-c", kWriter});
  v1::Mount* mount = w.config.add_mounts();
  mount->set_container_path("/out");
  mount->set_host_path(w.out);
  w.id = run_container(env.client(side), w.pod, w.config);
  return w;
}

void touch(const std::string& path) { std::ofstream(path).put('\n'); }

// Samples every writer's progress while containerd is away; the longest time each went
// without a new count is its stall.
void watch_progress(std::vector<Writer>& writers, std::chrono::seconds away) {
  const auto start = Clock::now();
  for (Writer& w : writers) {
    w.last_count = w.paused_at;
    w.moved_at = start;
  }
  while (Clock::now() - start < away) {
    std::this_thread::sleep_for(50ms);
    const auto now = Clock::now();
    for (Writer& w : writers) {
      long count = read_count(w.out + "/progress");
      if (count > w.last_count) {
        w.last_count = count;
        w.moved_at = now;
      }
      w.longest_stall = std::max(w.longest_stall, now - w.moved_at);
    }
  }
  for (Writer& w : writers) w.count_after_away = w.last_count;
}

// The log's stdout must be line(0) ... line(count - 1) then END, each once.
void check_log(const Writer& w, long count) {
  const std::string payload =
      cri_log_payload(parse_cri_log(read_file(log_path(w.pod, w.config))), "stdout");
  std::string expected;
  expected.reserve(static_cast<std::size_t>(count) * kLineBytes + 4);
  for (long i = 0; i < count; ++i) expected += line(static_cast<std::size_t>(i));
  expected += "END\n";
  if (payload != expected) {
    std::size_t at = 0;
    while (at < payload.size() && at < expected.size() && payload[at] == expected[at]) ++at;
    FAIL(
        fmt::format("{}: log differs from {} lines + END at byte {} (line {}); log has {} "
                    "bytes, expected {}; log there: \"{}\"",
                    side_name(w.side), count, at, at / kLineBytes, payload.size(), expected.size(),
                    payload.substr(at - at % kLineBytes, 80)));
  }
}

}  // namespace

TEST_CASE(
    "CRI output while containerd is away (kill -9): our containers never stall, and "
    "every line reaches the log once, in order",
    "[cri][multi-version][output-buffer]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  const std::chrono::seconds away = away_time();
  std::vector<Writer> writers;
  for (Side side : env.sides()) writers.push_back(start_writer(env, side));
  std::vector<CriDaemon*> daemons;
  for (Side side : env.sides()) {
    if (std::find(daemons.begin(), daemons.end(), &env.daemon(side)) == daemons.end()) {
      daemons.push_back(&env.daemon(side));
    }
  }
  for (Writer& w : writers) touch(w.out + "/pause");
  for (Writer& w : writers) {
    INFO(side_name(w.side));
    REQUIRE(shim::test::wait_until(
        [&] { return (w.paused_at = read_count(w.out + "/paused")) >= 0; }, 30s));
    if (w.paused_at > 0) wait_log_contains(log_path(w.pod, w.config), line(w.paused_at - 1), 30s);
  }

  for (CriDaemon* daemon : daemons) daemon->fx().kill9();
  for (Writer& w : writers) std::filesystem::remove(w.out + "/pause");
  watch_progress(writers, away);
  for (CriDaemon* daemon : daemons) {
    daemon->fx().start();
    daemon->client().wait_ready(60s);
  }

  for (Writer& w : writers) touch(w.out + "/stop");
  for (Writer& w : writers) {
    INFO(side_name(w.side));
    wait_exited(env.client(w.side), w.id, 60s);
    wait_log_contains(log_path(w.pod, w.config), "END", 120s);
    const long count = read_count(w.out + "/progress");
    REQUIRE(count >= w.count_after_away);
    check_log(w, count);
    const auto stall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(w.longest_stall);
    const std::size_t away_bytes =
        static_cast<std::size_t>(w.count_after_away - w.paused_at) * kLineBytes;
    fmt::print(
        "LIBSHIM-OUTPUT-CRI: containerd {} side={} away={} s written_while_away={} KiB "
        "longest_stall={} ms lines={} lost=0 duplicated=0\n",
        env.version().text, side_name(w.side), away.count(), away_bytes / 1024, stall_ms.count(),
        count);
    if (w.side != Side::go) {
      // The pipe and the FIFO alone hold 128 KiB: a writer that went on past twice that
      // was buffered by the shim; a blocked one stalls for the whole time away.
      CHECK(away_bytes >= 256 * 1024);
      CHECK(stall_ms < away / 2);
    }
    remove_pod(env.client(w.side), w.pod);
  }
}

}  // namespace shim::test::cri
