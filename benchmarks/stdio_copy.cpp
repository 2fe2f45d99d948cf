// stdio_copy: what copying a container's stdout costs the shim, splice vs read/write.
//
// A writer process pushes N MiB (default 512) into the runtime end of a ProcessIO's
// stdout pipe; a reader process drains the client FIFO; this process runs the event loop
// that copies. Reported per method: throughput and this process's CPU time (getrusage,
// user + system) per GiB copied. The writer and reader are separate processes, so their
// CPU is not counted. Each method runs `runs` times, alternating; medians are printed
// (the machine is usually shared, so single runs are noisy).
//
//   stdio_copy [MiB=512] [write size KiB=64] [runs=3]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "shim/clock.h"
#include "shim/logger.h"

#include "shim/stdio/process_io.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  double seconds = 0;
  double cpu_user = 0;
  double cpu_system = 0;
  std::uint64_t bytes = 0;
  bool ok = false;
};

double seconds_of(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

[[noreturn]] void die(const std::string& what) {
  std::perror(what.c_str());
  std::exit(1);
}

// In a forked child: keeps only fds 0-2 and `fd` (moved to 3), like an exec'd process
// would, so no stray copy of a pipe end delays anybody's EOF.
int keep_only(int fd) {
  if (fd >= 0 && fd != 3 && ::dup2(fd, 3) < 0) ::_exit(5);
  ::close_range(fd >= 0 ? 4 : 3, ~0u, 0);
  return 3;
}

// Writes `total` bytes to `out_fd` in `chunk`-sized writes, then exits.
pid_t fork_writer(int out_fd, std::uint64_t total, std::size_t chunk) {
  pid_t pid = ::fork();
  if (pid < 0) die("fork");
  if (pid > 0) return pid;
  out_fd = keep_only(out_fd);
  std::vector<char> buffer(chunk, 'x');
  std::uint64_t left = total;
  while (left > 0) {
    std::size_t want = left < chunk ? static_cast<std::size_t>(left) : chunk;
    ssize_t n = ::write(out_fd, buffer.data(), want);
    if (n <= 0) ::_exit(3);
    left -= static_cast<std::uint64_t>(n);
  }
  ::_exit(0);
}

// Drains the FIFO to EOF with 1 MiB reads; exit status 0 if it got `expected` bytes.
pid_t fork_reader(const std::string& fifo, std::uint64_t expected) {
  pid_t pid = ::fork();
  if (pid < 0) die("fork");
  if (pid > 0) return pid;
  keep_only(-1);
  int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ::_exit(2);
  std::vector<char> buffer(1 << 20);
  std::uint64_t got = 0;
  while (true) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n <= 0) break;
    got += static_cast<std::uint64_t>(n);
  }
  ::_exit(got == expected ? 0 : 4);
}

bool reaped_ok(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Sample run_once(shim::CopyMethod method, const std::string& fifo, std::uint64_t total,
                std::size_t chunk, const shim::Logger& logger) {
  boost::asio::io_context io;
  std::unique_ptr<shim::ProcessIO> pio;
  shim::StdioSpec spec{"", fifo, ""};
  shim::Status status = shim::ProcessIO::create(io.get_executor(), spec, -1, -1, logger,
                                                     &pio, shim::ProcessIOOptions{method});
  if (!status.ok()) {
    std::fprintf(stderr, "create: %s\n", status.to_string().c_str());
    std::exit(1);
  }
  pid_t reader = fork_reader(fifo, total);

  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  auto begin = Clock::now();
  pid_t writer = fork_writer(pio->runtime_stdout(), total, chunk);
  pio->close_runtime_ends();
  if (status = pio->start(); !status.ok()) {
    std::fprintf(stderr, "start: %s\n", status.to_string().c_str());
    std::exit(1);
  }
  Sample sample;
  pio->wait_drained(std::chrono::minutes(5), [&](bool drained) {
    sample.ok = drained;
    io.stop();
  });
  io.run();
  auto end = Clock::now();
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);

  sample.bytes = pio->copied_bytes(shim::StdioStream::kStdout);
  pio->close();
  pio.reset();
  io.restart();
  io.poll();
  sample.ok = reaped_ok(writer) && sample.ok;
  sample.ok = reaped_ok(reader) && sample.ok;
  sample.seconds = std::chrono::duration<double>(end - begin).count();
  sample.cpu_user = seconds_of(after.ru_utime) - seconds_of(before.ru_utime);
  sample.cpu_system = seconds_of(after.ru_stime) - seconds_of(before.ru_stime);
  return sample;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 512;
  std::size_t chunk_kib = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 64;
  int runs = argc > 3 ? std::atoi(argv[3]) : 3;
  if (mib == 0 || chunk_kib == 0 || runs <= 0) {
    std::fprintf(stderr, "usage: %s [MiB=512] [write size KiB=64] [runs=3]\n", argv[0]);
    return 2;
  }
  std::uint64_t total = mib << 20;

  char dir_template[] = "/tmp/stdio-copy-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) die("mkdtemp");
  std::string fifo = std::string(dir_template) + "/out";
  if (::mkfifo(fifo.c_str(), 0600) < 0) die("mkfifo");

  shim::SystemClock clock;
  shim::Logger logger(std::make_shared<shim::FdLogSink>(2), clock, shim::LogLevel::kWarn);

  const shim::CopyMethod methods[] = {shim::CopyMethod::kSplice,
                                           shim::CopyMethod::kReadWrite};
  std::vector<Sample> samples[2];
  bool all_ok = true;
  for (int run = 0; run < runs; ++run) {
    for (int m = 0; m < 2; ++m) {
      Sample sample = run_once(methods[m], fifo, total, chunk_kib << 10, logger);
      all_ok = all_ok && sample.ok && sample.bytes == total;
      samples[m].push_back(sample);
    }
  }
  ::unlink(fifo.c_str());
  ::rmdir(dir_template);

  std::printf("%llu MiB per run, writer chunks of %zu KiB, median of %d runs\n",
              static_cast<unsigned long long>(mib), chunk_kib, runs);
  std::printf("%-10s %10s %14s %10s %10s\n", "method", "MiB/s", "CPU s / GiB", "user s",
              "sys s");
  for (int m = 0; m < 2; ++m) {
    std::vector<double> rate, cpu_per_gib, user, sys;
    for (const Sample& s : samples[m]) {
      double gib = static_cast<double>(s.bytes) / (1u << 30);
      rate.push_back(static_cast<double>(s.bytes) / (1 << 20) / s.seconds);
      cpu_per_gib.push_back(gib > 0 ? (s.cpu_user + s.cpu_system) / gib : 0);
      user.push_back(s.cpu_user);
      sys.push_back(s.cpu_system);
    }
    std::printf("%-10s %10.0f %14.3f %10.3f %10.3f\n", m == 0 ? "splice" : "read/write",
                median(rate), median(cpu_per_gib), median(user), median(sys));
  }
  if (!all_ok) std::printf("FAILED: a run lost bytes or did not drain\n");
  return all_ok ? 0 : 1;
}
