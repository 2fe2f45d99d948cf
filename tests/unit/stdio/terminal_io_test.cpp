// ProcessIO with terminal=true, with a real pty: the test plays runc (opens the pty,
// sends the master to the console socket before "runc" returns) and the container
// process (reads and writes the slave).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/fs.h"
#include "shim/stdio/process_io.h"
#include "stdio/terminal_io.h"
#include "stdio_test_helpers.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"
#include "unit/isolated_child.h"
#include "unit/reaper_fixture.h"

namespace {

using namespace std::chrono_literals;
using shim::ProcessIO;
using shim::StdioSpec;
using shim::StdioStream;
using shim::test::IoThread;
using shim::test::TempDir;
using namespace stdio_test;

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string dir_of(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

struct Terminal {
  explicit Terminal(StdioSpec spec_in) : spec(std::move(spec_in)) {
    spec.terminal = true;
    shim::Status status =
        io.run([&] { return ProcessIO::create(io.executor(), spec, 0, 0, test_logger(), &pio); });
    INFO(status.to_string());
    REQUIRE(status.ok());
    socket_path = pio->console_socket_path();
    REQUIRE_FALSE(socket_path.empty());
  }
  ~Terminal() {
    io.run([&] { pio.reset(); });
    if (slave >= 0) ::close(slave);
  }

  // runc create/exec, then the pool job, then start() on the loop.
  void run_and_start(bool raw = true) {
    slave = runc_sends_console(socket_path, raw);
    shim::Status received = pio->console_receiver()();
    INFO(received.to_string());
    REQUIRE(received.ok());
    shim::Status started = io.run([&] { return pio->start(); });
    INFO(started.to_string());
    REQUIRE(started.ok());
  }

  bool wait_drained(std::chrono::milliseconds timeout) {
    auto promise = std::make_shared<std::promise<bool>>();
    auto result = promise->get_future();
    io.run([&] {
      pio->wait_drained(timeout, [promise](bool drained) { promise->set_value(drained); });
    });
    REQUIRE(result.wait_for(timeout + 5s) == std::future_status::ready);
    return result.get();
  }

  IoThread io;
  StdioSpec spec;
  std::unique_ptr<ProcessIO> pio;
  std::string socket_path;
  int slave = -1;
};

std::string read_exactly(int fd, std::size_t size) {
  std::string text;
  char buffer[4096];
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (text.size() < size && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::read(fd, buffer, std::min(sizeof buffer, size - text.size()));
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
    if (n <= 0) break;
  }
  return text;
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    REQUIRE(n > 0);
    done += static_cast<std::size_t>(n);
  }
}

TEST_CASE("terminal: output and input go through the pty, slave close is EOF", "[terminal]") {
  TempDir dir;
  std::string in = make_fifo(dir, "in");
  std::string out = make_fifo(dir, "out");
  Terminal t(StdioSpec{in, out, "", true});
  CHECK(t.pio->runtime_stdin() == -1);
  CHECK(t.pio->runtime_stdout() == -1);
  CHECK(t.pio->runtime_stderr() == -1);
  std::string expected = seq_text(100000);  // ~590 KB: many times a pty's buffer
  FifoReader reader(out, &expected);
  t.run_and_start();
  CHECK_FALSE(exists(dir_of(t.socket_path)));  // the socket and its dir go at start

  int client_in = ::open(in.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(client_in >= 0);
  write_all(client_in, "typed\n");
  CHECK(read_exactly(t.slave, 6) == "typed\n");

  std::thread writer([&] { write_all(t.slave, expected); });
  writer.join();
  ::close(t.slave);
  t.slave = -1;
  auto result = reader.get();
  CHECK(result.bytes == expected.size());
  CHECK(result.first_mismatch == FifoReader::kNone);
  CHECK(t.wait_drained(5s));
  CHECK(t.pio->copied_bytes(StdioStream::kStdout) == expected.size());
  CHECK(t.pio->copied_bytes(StdioStream::kStdin) == 6);
  ::close(client_in);
}

TEST_CASE("terminal: the line discipline's output processing is kept", "[terminal]") {
  TempDir dir;
  std::string out = make_fifo(dir, "out");
  Terminal t(StdioSpec{"", out, "", true});
  FifoReader reader(out);
  t.run_and_start(/*raw=*/false);
  write_all(t.slave, "hello\n");
  ::close(t.slave);
  t.slave = -1;
  CHECK(reader.get().text == "hello\r\n");
}

TEST_CASE("terminal: resize sets the window size the process sees", "[terminal]") {
  TempDir dir;
  std::string out = make_fifo(dir, "out");
  Terminal t(StdioSpec{"", out, "", true});
  // Before the console exists: success, no effect.
  CHECK(t.io.run([&] { return t.pio->resize(80, 24); }).ok());
  FifoReader reader(out);
  t.run_and_start();
  shim::Status status = t.io.run([&] { return t.pio->resize(101, 33); });
  REQUIRE(status.ok());
  winsize size{};
  REQUIRE(::ioctl(t.slave, TIOCGWINSZ, &size) == 0);
  CHECK(size.ws_row == 33);
  CHECK(size.ws_col == 101);
  ::close(t.slave);  // the copy ends, the reader sees EOF
  t.slave = -1;
  CHECK(reader.get().bytes == 0);
}

TEST_CASE("terminal: after the process exit a child holding the pty does not keep the copy",
          "[terminal]") {
  TempDir dir;
  std::string out = make_fifo(dir, "out");
  Terminal t(StdioSpec{"", out, "", true});
  FifoReader reader(out);
  t.run_and_start();
  write_all(t.slave, "last words");
  t.io.run([&] { t.pio->process_exited(); });
  // The slave stays open (a background child of the process holds it).
  auto result = reader.get(5s);
  CHECK(result.text == "last words");
  CHECK(t.wait_drained(5s));
}

TEST_CASE("terminal: the end of stdin hangs the terminal up", "[terminal]") {
  TempDir dir;
  std::string in = make_fifo(dir, "in");
  std::string out = make_fifo(dir, "out");
  Terminal t(StdioSpec{in, out, "", true});
  FifoReader reader(out);
  t.run_and_start();
  int client_in = ::open(in.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(client_in >= 0);
  write_all(client_in, "x");
  CHECK(read_exactly(t.slave, 1) == "x");
  // CloseIO, and the client closes its end: stdin's EOF.
  t.io.run([&] { t.pio->close_stdin(); });
  ::close(client_in);
  CHECK(t.wait_drained(5s));
  // The master is closed: the slave is hung up.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  ssize_t n = 1;
  while (std::chrono::steady_clock::now() < deadline) {
    n = ::write(t.slave, "y", 1);
    if (n < 0) break;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(n < 0);
  CHECK(errno == EIO);
}

TEST_CASE("terminal: no stdout discards the output instead of blocking", "[terminal]") {
  Terminal t(StdioSpec{"", "", "", true});
  t.run_and_start();
  std::string text(256 * 1024, 'z');
  std::thread writer([&] { write_all(t.slave, text); });
  writer.join();  // would block forever on a full pty
  ::close(t.slave);
  t.slave = -1;
  CHECK(t.wait_drained(5s));
  CHECK(t.pio->copied_bytes(StdioStream::kStdout) == text.size());
}

TEST_CASE("terminal: file:// stdout appends the console output", "[terminal]") {
  TempDir dir;
  std::string file = dir.sub("logs/out.log");
  Terminal t(StdioSpec{"", "file://" + file, "", true});
  t.run_and_start();
  write_all(t.slave, "to-file");
  ::close(t.slave);
  t.slave = -1;
  REQUIRE(t.wait_drained(5s));
  std::string content;
  REQUIRE(shim::read_file(file, &content).ok());
  CHECK(content == "to-file");
}

TEST_CASE("terminal: the console receiver gives a clear error when runc sent nothing",
          "[terminal]") {
  Terminal t(StdioSpec{"", "", "", true});
  std::string dir = dir_of(t.socket_path);
  // A close() while nothing came: the receiver fails at once, the dir is gone.
  t.io.run([&] { t.pio->close(); });
  shim::Status status = t.pio->console_receiver()();
  CHECK_FALSE(status.ok());
  CHECK(status.message().rfind("failed to retrieve console master", 0) == 0);
  CHECK_FALSE(exists(dir));
}

TEST_CASE("terminal: the console receiver opens stdout once its client reads", "[terminal]") {
  TempDir dir;
  std::string out = make_fifo(dir, "out");
  Terminal t(StdioSpec{"", out, "", true});
  // The client's reader, non-blocking: a read sees EOF while no writer exists, EAGAIN
  // once one does.
  int client = ::open(out.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(client >= 0);
  char byte;
  CHECK(::read(client, &byte, 1) == 0);
  t.slave = runc_sends_console(t.socket_path);
  REQUIRE(t.pio->console_receiver()().ok());
  // Before start(): the FIFO is already open for writing (the reply to the runtime call
  // comes after this, as in the Go shim).
  CHECK(::read(client, &byte, 1) == -1);
  CHECK(errno == EAGAIN);
  REQUIRE(t.io.run([&] { return t.pio->start(); }).ok());
  write_all(t.slave, "w");
  ::close(t.slave);
  t.slave = -1;
  REQUIRE(t.wait_drained(5s));
  CHECK(::read(client, &byte, 1) == 1);
  CHECK(byte == 'w');
  ::close(client);
}

TEST_CASE("terminal: a stdout client arriving late still gets the output", "[terminal]") {
  TempDir dir;
  std::string out = make_fifo(dir, "out");
  IoThread io;
  std::shared_ptr<shim::TerminalIO> terminal;
  REQUIRE(shim::TerminalIO::create(io.executor(), StdioSpec{"", out, "", true}, test_logger(),
                                   &terminal)
              .ok());
  int slave = runc_sends_console(terminal->console_socket_path());
  REQUIRE(terminal->receive_console(2s).ok());
  auto begin = std::chrono::steady_clock::now();
  terminal->wait_output_reader(50ms);  // nobody reads yet: gives up
  CHECK(std::chrono::steady_clock::now() - begin >= 50ms);
  shim::stdio::Fd keeper;
  auto done = std::make_shared<std::promise<std::uint64_t>>();
  REQUIRE(io.run([&] {
              return terminal->start(
                  shim::stdio::Fd(), &keeper,
                  [done](const shim::stdio::CopyResult& r) { done->set_value(r.bytes); });
            }).ok());
  write_all(slave, "late");
  ::close(slave);
  FifoReader reader(out);  // opens only now
  CHECK(reader.get().text == "late");
  auto bytes = done->get_future();
  REQUIRE(bytes.wait_for(5s) == std::future_status::ready);
  CHECK(bytes.get() == 4);
  io.run([&] { terminal->close(); });
}

// A binary:// logger: copies its fd 3 (the container's stdout) to a file next to it,
// says ready, and stays until that copy ends or SIGTERM.
const char* kCopyingLogger = R"(#!/bin/sh
d=${0%/*}
/bin/cat <&3 > "$d/logged" 4<&- 5>&- &
exec 3<&- 4<&-
printf R >&5
exec 5>&-
wait
)";

TEST_CASE("terminal: a binary:// logger gets the console output on its stdout pipe", "[terminal]") {
  auto outcome = shim_test::run_in_child([](shim_test::ChildReport& report) {
    shim_test::LoopWithReaper loop;
    shim::PosixSpawner spawner;
    TempDir dir;
    std::string logger = dir.sub("logger");
    std::ofstream(logger) << kCopyingLogger;
    ::chmod(logger.c_str(), 0755);
    shim::ProcessIOOptions options;
    options.binary_logger.reaper = &loop.reaper;
    options.binary_logger.spawner = &spawner;
    options.binary_logger.process_id = "c1";
    options.binary_logger.ns = "ns1";
    std::unique_ptr<ProcessIO> pio;
    StdioSpec spec{"", "binary://" + logger, "", true};
    shim::Status created =
        ProcessIO::create(loop.io.get_executor(), spec, 0, 0, test_logger(), &pio, options);
    if (!report.check(created.ok(), created.to_string())) return;
    report.check(pio->runtime_stdout() == -1 && pio->runtime_stderr() == -1, "pipes for runc");
    shim::Status ready = std::async(std::launch::async, pio->logger_starter()).get();
    if (!report.check(ready.ok(), ready.to_string())) return;
    int slave = runc_sends_console(pio->console_socket_path());
    shim::Status received = pio->console_receiver()();
    if (!report.check(received.ok(), received.to_string())) return;
    std::promise<shim::Status> started;
    loop.run_on_loop([&] { started.set_value(pio->start()); });
    shim::Status start_status = started.get_future().get();
    if (!report.check(start_status.ok(), start_status.to_string())) return;
    report.check(::write(slave, "via-logger", 10) == 10, "write the slave");
    ::close(slave);
    std::string logged;
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (logged != "via-logger" && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
      std::ifstream in(dir.sub("logged"));
      logged.assign(std::istreambuf_iterator<char>(in), {});
    }
    report.check(logged == "via-logger", "logged: " + logged);
    bool drained = false;
    loop.run_on_loop([&] { drained = pio->drained(); });
    report.check(drained, "console copy not ended");
    std::promise<void> closed;
    loop.run_on_loop([&] {
      pio->close();
      pio->after_logger_exit([&] { closed.set_value(); });
      pio.reset();
    });
    report.check(closed.get_future().wait_for(15s) == std::future_status::ready,
                 "logger not stopped");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("terminal: no fd or dir leaks across create/receive/start/close cycles", "[terminal]") {
  TempDir dir;
  std::string in = make_fifo(dir, "in");
  std::string out = make_fifo(dir, "out");
  IoThread io;
  auto cycle = [&](bool start) {
    std::unique_ptr<ProcessIO> pio;
    StdioSpec spec{in, out, "", true};
    REQUIRE(io.run([&] {
                return ProcessIO::create(io.executor(), spec, 0, 0, test_logger(), &pio);
              }).ok());
    std::string socket_dir = dir_of(pio->console_socket_path());
    if (start) {
      FifoReader reader(out);
      int slave = runc_sends_console(pio->console_socket_path());
      REQUIRE(pio->console_receiver()().ok());
      REQUIRE(io.run([&] { return pio->start(); }).ok());
      write_all(slave, "ok");
      ::close(slave);
      CHECK(reader.get().text == "ok");
    } else {
      // runc failed after sending the master: the queued fd goes with the socket.
      ::close(runc_sends_console(pio->console_socket_path()));
    }
    io.run([&] { pio.reset(); });
    CHECK_FALSE(exists(socket_dir));
  };
  cycle(true);  // warm-up: lazily opened fds (epoll) exist before the count
  int before = count_open_fds();
  for (int i = 0; i < 10; ++i) cycle(i % 2 == 0);
  io.drain();
  INFO(fd_listing());
  CHECK(count_open_fds() == before);
}

}  // namespace
