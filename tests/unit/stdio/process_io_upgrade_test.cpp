// ProcessIO across a live upgrade: save_for_upgrade() in one ProcessIO, an exec simulated
// (every kept fd survives under its number, everything else of the old object is gone),
// restore() into a new one; real FIFOs, real writer children, real readers.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include "shim/stdio/process_io.h"
#include "stdio_test_helpers.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using shim::CopyMethod;
using shim::OutputBufferOptions;
using shim::ProcessIO;
using shim::ProcessIOOptions;
using shim::StdioSpec;
using shim::StdioStream;
using shim::test::IoThread;
using shim::test::TempDir;
using namespace stdio_test;
namespace json = boost::json;

std::unique_ptr<ProcessIO> create_io(IoThread& io, const StdioSpec& spec,
                                     const ProcessIOOptions& options) {
  std::unique_ptr<ProcessIO> pio;
  shim::Status status = io.run([&] {
    return ProcessIO::create(io.executor(), spec, static_cast<int>(::getuid()),
                             static_cast<int>(::getgid()), test_logger(), &pio, options);
  });
  INFO(status.to_string());
  REQUIRE(status.ok());
  return pio;
}

// One live upgrade of `pio`, in one turn of the loop as the shim does it: save, then what
// execve does (the kept fds stay open under their numbers, the old program's objects are
// gone: here they close everything of theirs, and the kept numbers are put back), then
// restore from the state as text.
void carry(IoThread& io, std::unique_ptr<ProcessIO>& pio, const StdioSpec& spec,
           const ProcessIOOptions& options) {
  std::string failure = io.run([&]() -> std::string {
    json::object state;
    std::vector<int> kept;
    if (shim::Status s = pio->save_for_upgrade(&state, &kept); !s.ok()) return s.to_string();
    const std::string text = json::serialize(state);
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    std::vector<std::pair<int, int>> copies;
    for (int fd : kept) copies.emplace_back(fd, ::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    pio.reset();
    for (auto [fd, copy] : copies) {
      if (copy < 0 || ::dup3(copy, fd, O_CLOEXEC) != fd) return "fd " + std::to_string(fd);
      ::close(copy);
    }
    shim::Status restored =
        ProcessIO::restore(io.executor(), spec, json::parse(text), test_logger(), &pio, options);
    return restored.ok() ? "" : restored.to_string();
  });
  INFO(failure);
  REQUIRE(failure.empty());
  REQUIRE(pio != nullptr);
}

}  // namespace

TEST_CASE("output held while nobody reads crosses three live upgrades: every byte once in order",
          "[stdio][upgrade]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  ::signal(SIGPIPE, SIG_IGN);
  TempDir dir("pio-upgrade-");
  std::string out = make_fifo(dir, "out");
  const StdioSpec spec{"", out, ""};
  ProcessIOOptions options{method};
  options.output_buffer = OutputBufferOptions{
      .memory_bytes = 64 * 1024, .spill_bytes = 8 << 20, .spill_dir = dir.path()};
  const std::string expected = seq_text(200000);  // 1.3 MiB
  IoThread io;
  auto pio = create_io(io, spec, options);
  {
    // The client reads a little, then goes away (containerd stopped): the rest waits in
    // the pipe, the FIFO and the buffer (memory, then the spill file).
    FifoReader first(out, &expected, 0, 100000);
    pid_t child = spawn_child({"seq", "1", "200000"}, child_fds(*pio));
    pio->close_runtime_ends();
    REQUIRE(io.run([&] { return pio->start(); }).ok());
    CHECK(first.get().bytes == 100000);
    CHECK(exited_ok(wait_child(child, 10s)));
  }
  std::this_thread::sleep_for(200ms);
  const std::uint64_t held = io.run([&] { return pio->buffered_bytes(StdioStream::kStdout); });
  CHECK(held > 64 * 1024);  // memory full: part of it is in the spill file
  for (int swap = 0; swap < 3; ++swap) carry(io, pio, spec, options);
  CHECK(io.run([&] { return pio->buffered_bytes(StdioStream::kStdout); }) == held);

  FifoReader rest(out, &expected, 100000);
  auto result = rest.get();
  CHECK(result.bytes == expected.size() - 100000);
  CHECK(result.first_mismatch == FifoReader::kNone);
  CHECK(wait_drained(io, *pio, 5s));
  CHECK(io.run([&] { return pio->copied_bytes(StdioStream::kStdout); }) == expected.size());
  io.run([&] { pio.reset(); });
}

TEST_CASE("an output FIFO still without a reader crosses a live upgrade and leaks no fd",
          "[stdio][upgrade]") {
  TempDir dir("pio-upgrade-");
  std::string out = make_fifo(dir, "out");
  std::string err = make_fifo(dir, "err");
  const StdioSpec spec{"", out, err};
  const ProcessIOOptions options{CopyMethod::kSplice};
  const std::string expected = seq_text(12000);  // fits the pipe: the child exits at once
  const std::string before = fd_listing();
  {
    IoThread io;  // its own fds (epoll, eventfd, timerfd) go with it
    auto pio = create_io(io, spec, options);
    pid_t child = spawn_child({"seq", "1", "12000"}, child_fds(*pio));
    pio->close_runtime_ends();
    REQUIRE(io.run([&] { return pio->start(); }).ok());
    CHECK(exited_ok(wait_child(child, 5s)));
    carry(io, pio, spec, options);
    carry(io, pio, spec, options);
    {
      FifoReader stdout_reader(out, &expected);
      FifoReader stderr_reader(err);
      auto result = stdout_reader.get();
      CHECK(result.bytes == expected.size());
      CHECK(result.first_mismatch == FifoReader::kNone);
      CHECK(stderr_reader.get().bytes == 0);
    }
    CHECK(wait_drained(io, *pio, 5s));
    io.run([&] { pio.reset(); });
    io.drain();
  }
  INFO(fds_opened_since(before));
  CHECK(fds_opened_since(before).empty());
}

TEST_CASE("stdin crosses a live upgrade: the process reads every byte once in order",
          "[stdio][upgrade]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  TempDir dir("pio-upgrade-");
  std::string in = make_fifo(dir, "in");
  std::string out = make_fifo(dir, "out");
  const StdioSpec spec{in, out, ""};
  const ProcessIOOptions options{method};
  std::string sent;
  for (int i = 0; i < 4000; ++i) sent += "line " + std::to_string(i) + " through stdin\n";
  IoThread io;
  FifoReader reader(out, &sent);
  auto pio = create_io(io, spec, options);
  pid_t child = spawn_child({"cat"}, child_fds(*pio));
  pio->close_runtime_ends();
  REQUIRE(io.run([&] { return pio->start(); }).ok());
  int client = ::open(in.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(client >= 0);
  const std::size_t half = sent.size() / 2;
  REQUIRE(::write(client, sent.data(), half) == static_cast<ssize_t>(half));
  carry(io, pio, spec, options);
  REQUIRE(::write(client, sent.data() + half, sent.size() - half) ==
          static_cast<ssize_t>(sent.size() - half));
  ::close(client);
  // The keeper crossed too: cat sees EOF only at CloseIO.
  CHECK_FALSE(wait_child(child, 200ms).has_value());
  io.run([&] { pio->close_stdin(); });
  CHECK(exited_ok(wait_child(child, 5s)));
  auto result = reader.get();
  CHECK(result.bytes == sent.size());
  CHECK(result.first_mismatch == FifoReader::kNone);
  CHECK(wait_drained(io, *pio, 5s));
  io.run([&] { pio.reset(); });
}

TEST_CASE("a terminal crosses two live upgrades mid-stream: input and output once in order",
          "[stdio][upgrade][terminal]") {
  TempDir dir("pio-upgrade-");
  std::string in = make_fifo(dir, "in");
  std::string out = make_fifo(dir, "out");
  const StdioSpec spec{in, out, "", true};
  const ProcessIOOptions options{};
  const std::string expected = seq_text(100000);  // ~590 KB: many times a pty's buffer
  IoThread io;
  auto pio = create_io(io, spec, options);
  FifoReader reader(out, &expected);
  int slave = runc_sends_console(pio->console_socket_path());
  REQUIRE(pio->console_receiver()().ok());
  REQUIRE(io.run([&] { return pio->start(); }).ok());
  int client = ::open(in.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(client >= 0);

  // The process writes all the while; the client types before and after the swaps.
  std::thread writer([&] {
    std::size_t done = 0;
    while (done < expected.size()) {
      ssize_t n = ::write(slave, expected.data() + done,
                          std::min<std::size_t>(4096, expected.size() - done));
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
  });
  REQUIRE(::write(client, "before\n", 7) == 7);
  carry(io, pio, spec, options);
  carry(io, pio, spec, options);
  REQUIRE(::write(client, "after\n", 6) == 6);
  writer.join();
  std::string typed;
  char chunk[64];
  while (typed.size() < 13) {
    ssize_t n = ::read(slave, chunk, sizeof chunk);
    REQUIRE(n > 0);
    typed.append(chunk, static_cast<std::size_t>(n));
  }
  CHECK(typed == "before\nafter\n");
  ::close(slave);
  auto result = reader.get();
  CHECK(result.bytes == expected.size());
  CHECK(result.first_mismatch == FifoReader::kNone);
  CHECK(wait_drained(io, *pio, 5s));
  CHECK(io.run([&] { return pio->copied_bytes(StdioStream::kStdout); }) == expected.size());
  ::close(client);
  io.run([&] { pio.reset(); });
}

TEST_CASE("an exec whose terminal has not started refuses the upgrade",
          "[stdio][upgrade][terminal]") {
  TempDir dir("pio-upgrade-");
  std::string out = make_fifo(dir, "out");
  IoThread io;
  auto pio = create_io(io, StdioSpec{"", out, "", true}, ProcessIOOptions{});
  shim::Status ready = io.run([&] { return pio->upgrade_ready(); });
  CHECK(ready.code() == shim::Code::kFailedPrecondition);
  CHECK(ready.message() ==
        "its terminal has not started yet (the runtime has not sent its console)");
  io.run([&] { pio.reset(); });
}
