// Waiting until a FIFO's client has read what the shim wrote (fifo_delivery.h), and
// ProcessIO::wait_delivered built on it: Delete must not be answered while ctr 1.6 still
// has output to read, since it drops unread FIFO bytes once Delete returns.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "stdio/fifo_delivery.h"
#include "shim/stdio/process_io.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"
#include "stdio_test_helpers.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using shim::stdio::Fd;
using shim::stdio::FifoReadWait;
using shim::test::IoThread;
using shim::test::TempDir;

// A FIFO with a client reader, our probe reader and a writer, all non-blocking.
struct Fifo {
  explicit Fifo(const TempDir& dir) : path(stdio_test::make_fifo(dir, "f")) {
    client = Fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    probe = Fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    writer = Fd(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    REQUIRE(client.valid());
    REQUIRE(probe.valid());
    REQUIRE(writer.valid());
  }
  void write(const std::string& bytes) const {
    REQUIRE(::write(writer.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
  std::string read_client() const {
    char buffer[256];
    ssize_t n = ::read(client.get(), buffer, sizeof buffer);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  }
  Fd probe_copy() const { return Fd(::fcntl(probe.get(), F_DUPFD_CLOEXEC, 0)); }

  std::string path;
  Fd client, probe, writer;
};

struct Outcome {
  bool read = false;
  std::chrono::milliseconds took{0};
};

// Starts wait_until_read on `io`; the future resolves with its result and duration.
std::future<Outcome> start_wait(IoThread& io, std::vector<Fd> readers, FifoReadWait wait) {
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto result = promise->get_future();
  const auto started = Clock::now();
  auto shared = std::make_shared<std::vector<Fd>>(std::move(readers));
  io.run([&io, shared, wait, promise, started] {
    shim::stdio::wait_until_read(io.executor(), std::move(*shared), wait, [=](bool read) {
      promise->set_value(Outcome{read, std::chrono::duration_cast<std::chrono::milliseconds>(
                                           Clock::now() - started)});
    });
  });
  return result;
}

FifoReadWait within(std::chrono::milliseconds timeout, std::chrono::milliseconds stall = 50ms) {
  return FifoReadWait{.deadline = Clock::now() + timeout, .stall = stall};
}

TEST_CASE("fifo delivery: FIONREAD counts the bytes a FIFO holds", "[fifo-delivery]") {
  TempDir dir("fdl-");
  Fifo fifo(dir);
  CHECK(shim::stdio::unread_bytes(fifo.probe.get()) == 0);
  fifo.write("hello");
  CHECK(shim::stdio::unread_bytes(fifo.probe.get()) == 5);
  CHECK(fifo.read_client() == "hello");
  CHECK(shim::stdio::unread_bytes(fifo.probe.get()) == 0);
  CHECK(shim::stdio::unread_bytes(-1) == 0);
}

TEST_CASE("fifo delivery: an empty FIFO is read at once", "[fifo-delivery]") {
  TempDir dir("fdl-");
  Fifo fifo(dir);
  IoThread io;
  std::vector<Fd> readers;
  readers.push_back(fifo.probe_copy());
  auto outcome = start_wait(io, std::move(readers), within(5s)).get();
  CHECK(outcome.read);
  CHECK(outcome.took < 1s);
}

TEST_CASE("fifo delivery: the wait ends when a late client has read", "[fifo-delivery]") {
  TempDir dir("fdl-");
  Fifo fifo(dir);
  IoThread io;
  fifo.write("late reader");
  std::vector<Fd> readers;
  readers.push_back(fifo.probe_copy());
  auto result = start_wait(io, std::move(readers), within(5s, 1s));
  std::this_thread::sleep_for(40ms);
  REQUIRE(result.wait_for(0ms) == std::future_status::timeout);  // still waiting
  CHECK(fifo.read_client() == "late reader");
  auto outcome = result.get();
  CHECK(outcome.read);
  CHECK(outcome.took >= 35ms);
  CHECK(outcome.took < 1s);
}

TEST_CASE("fifo delivery: nobody reading ends the wait after the stall time", "[fifo-delivery]") {
  TempDir dir("fdl-");
  Fifo fifo(dir);
  IoThread io;
  fifo.write("never read");
  std::vector<Fd> readers;
  readers.push_back(fifo.probe_copy());
  auto outcome = start_wait(io, std::move(readers), within(5s, 50ms)).get();
  CHECK_FALSE(outcome.read);
  CHECK(outcome.took >= 45ms);
  CHECK(outcome.took < 2s);
  CHECK(fifo.read_client() == "never read");  // nothing was taken from the client
}

TEST_CASE("fifo delivery: a client reading slowly is waited for until the deadline",
          "[fifo-delivery]") {
  TempDir dir("fdl-");
  Fifo fifo(dir);
  IoThread io;
  fifo.write(std::string(200, 'x'));
  std::vector<Fd> readers;
  readers.push_back(fifo.probe_copy());
  auto result = start_wait(io, std::move(readers), within(150ms, 40ms));
  // One byte every 10 ms: progress, so no stall, but never done before the deadline.
  char byte;
  while (result.wait_for(10ms) != std::future_status::ready) {
    if (::read(fifo.client.get(), &byte, 1) < 0) break;
  }
  auto outcome = result.get();
  CHECK_FALSE(outcome.read);
  CHECK(outcome.took >= 140ms);
  CHECK(outcome.took < 2s);
}

TEST_CASE("fifo delivery: ProcessIO waits for the client to read a process's last bytes",
          "[fifo-delivery]") {
  TempDir dir("fdl-");
  const std::string out = stdio_test::make_fifo(dir, "out");
  const std::string err = stdio_test::make_fifo(dir, "err");
  // ctr's side: readers opened before the process starts, read only later.
  Fd out_client(::open(out.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  Fd err_client(::open(err.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  REQUIRE(out_client.valid());
  REQUIRE(err_client.valid());
  IoThread io;
  std::unique_ptr<shim::ProcessIO> pio;
  REQUIRE(io.run([&] {
              return shim::ProcessIO::create(io.executor(), {"", out, err},
                                                  static_cast<int>(::getuid()),
                                                  static_cast<int>(::getgid()),
                                                  stdio_test::test_logger(), &pio);
            }).ok());
  // The "process" writes and is gone before the copies start.
  REQUIRE(::write(pio->runtime_stdout(), "last words\n", 11) == 11);
  pio->close_runtime_ends();
  REQUIRE(io.run([&] { return pio->start(); }).ok());

  const bool read_late = GENERATE(true, false);
  auto promise = std::make_shared<std::promise<bool>>();
  auto delivered = promise->get_future();
  const auto started = Clock::now();
  io.run([&] { pio->wait_delivered(5s, [promise](bool ok) { promise->set_value(ok); }); });
  if (read_late) {
    std::this_thread::sleep_for(30ms);
    CHECK(delivered.wait_for(0ms) == std::future_status::timeout);
    char buffer[64];
    CHECK(::read(out_client.get(), buffer, sizeof buffer) == 11);
    CHECK(delivered.get());
  } else {
    CHECK_FALSE(delivered.get());  // nobody read: the stall ends the wait
    CHECK(Clock::now() - started < 2s);
  }
  io.run([&] { pio.reset(); });
}

}  // namespace

// ---- ProcessIO::wait_settled: what a process's TaskExit waits for ---------------------

// A ProcessIO copying to `out`, whose client reader is `client` (opened first, as ctr does).
struct SettleSetup {
  explicit SettleSetup(const TempDir& dir) : out(stdio_test::make_fifo(dir, "out")) {
    client = Fd(::open(out.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    REQUIRE(client.valid());
    REQUIRE(io.run([&] {
                return shim::ProcessIO::create(io.executor(), {"", out, ""},
                                               static_cast<int>(::getuid()),
                                               static_cast<int>(::getgid()),
                                               stdio_test::test_logger(), &pio);
              }).ok());
  }
  ~SettleSetup() {
    io.run([&] { pio.reset(); });
  }
  void start() { REQUIRE(io.run([&] { return pio->start(); }).ok()); }
  std::future<Outcome> settle(std::chrono::milliseconds timeout, std::chrono::milliseconds stall) {
    auto promise = std::make_shared<std::promise<Outcome>>();
    auto result = promise->get_future();
    const auto started = Clock::now();
    io.run([&, promise, started] {
      pio->wait_settled(timeout, stall, [promise, started](bool settled) {
        promise->set_value(Outcome{settled, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                Clock::now() - started)});
      });
    });
    return result;
  }

  std::string out;
  Fd client;
  IoThread io;
  std::unique_ptr<shim::ProcessIO> pio;
};

TEST_CASE("wait_settled: output nobody reads holds the exit only for the stall time",
          "[fifo-delivery]") {
  TempDir dir("fdl-");
  SettleSetup s(dir);
  REQUIRE(::write(s.pio->runtime_stdout(), "unread\n", 7) == 7);
  s.pio->close_runtime_ends();
  s.start();
  auto outcome = s.settle(5s, 80ms).get();
  CHECK_FALSE(outcome.read);
  CHECK(outcome.took >= 75ms);
  CHECK(outcome.took < 2s);
  char buffer[16];
  CHECK(::read(s.client.get(), buffer, sizeof buffer) == 7);  // still there for the client
}

TEST_CASE("wait_settled: a writer left holding the pipe ends the wait after the stall time",
          "[fifo-delivery]") {
  TempDir dir("fdl-");
  SettleSetup s(dir);
  // A background child with the process's stdout: the copy never reaches EOF.
  Fd child_stdout(::fcntl(s.pio->runtime_stdout(), F_DUPFD_CLOEXEC, 0));
  s.pio->close_runtime_ends();
  s.start();
  auto outcome = s.settle(5s, 80ms).get();
  CHECK_FALSE(outcome.read);
  CHECK(outcome.took >= 75ms);
  CHECK(outcome.took < 2s);
}

TEST_CASE("wait_settled: a slow client that keeps reading gets every byte before the exit",
          "[fifo-delivery]") {
  TempDir dir("fdl-");
  SettleSetup s(dir);
  constexpr std::size_t kSize = 256 * 1024;  // more than the pipe and the FIFO hold
  Fd writer(::fcntl(s.pio->runtime_stdout(), F_DUPFD_CLOEXEC, 0));
  s.pio->close_runtime_ends();
  s.start();
  std::size_t written = 0;  // Catch2 assertions are not for other threads
  std::thread process([&writer, &written] {
    const std::string chunk(4096, 'o');
    while (written < kSize) {
      ssize_t n = ::write(writer.get(), chunk.data(), chunk.size());  // blocking
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    writer.reset();  // the process exits
  });
  std::size_t read = 0;
  std::future<Outcome> result;
  char buffer[4096];
  // 4 KiB every 5 ms: slower than the process writes, never still for the 80 ms stall.
  for (int rounds = 0; rounds < 2000 && read < kSize; ++rounds) {
    if (rounds == 8) result = s.settle(10s, 80ms);  // the exit, while output is pending
    std::this_thread::sleep_for(5ms);
    ssize_t n = ::read(s.client.get(), buffer, sizeof buffer);
    if (n > 0) read += static_cast<std::size_t>(n);
  }
  process.join();
  CHECK(written == kSize);
  CHECK(read == kSize);
  REQUIRE(result.valid());
  auto outcome = result.get();
  CHECK(outcome.read);
}
