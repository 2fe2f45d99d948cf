// ProcessIO: the stdio of a container process, with real FIFOs and real writer children
// (spawned with PosixSpawner on the runtime ends of the pipes, reaped here by pid).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/stdio/process_io.h"
#include "stdio/stdio_uri.h"
#include "stdio_test_helpers.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using shim::CopyMethod;
using shim::ProcessIO;
using shim::ProcessIOOptions;
using shim::StdioSpec;
using shim::StdioStream;
using shim::test::IoThread;
using shim::test::TempDir;
using namespace stdio_test;

// Creates a ProcessIO on the loop; REQUIREs success.
std::unique_ptr<ProcessIO> create_io(IoThread& io, const StdioSpec& spec,
                                     CopyMethod method = CopyMethod::kSplice) {
  std::unique_ptr<ProcessIO> pio;
  shim::Status status = io.run([&] {
    return ProcessIO::create(io.executor(), spec, static_cast<int>(::getuid()),
                             static_cast<int>(::getgid()), test_logger(), &pio,
                             ProcessIOOptions{method});
  });
  INFO(status.to_string());
  REQUIRE(status.ok());
  REQUIRE(pio != nullptr);
  return pio;
}

shim::Status start_io(IoThread& io, ProcessIO& pio) {
  return io.run([&] { return pio.start(); });
}

void destroy_io(IoThread& io, std::unique_ptr<ProcessIO>& pio) {
  io.run([&] { pio.reset(); });
}

// The loop still answers: a posted no-op runs within 2 s (generous: the machine may be
// loaded; a loop blocked in a read, write or open would never answer).
bool loop_responsive(IoThread& io) {
  try {
    io.run([] {}, 2000ms);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

// ---- tests ----

TEST_CASE("64 MiB through stdout and stderr arrive byte-exact from a child that exits at once",
          "[stdio]") {
  CopyMethod method = GENERATE(CopyMethod::kReadWrite, CopyMethod::kSplice);
  INFO("splice: " << (method == CopyMethod::kSplice));
  const int last = 8'600'000;  // seq 1 8600000: 67.7 MB
  static const std::string expected = seq_text(last);
  REQUIRE(expected.size() >= 64u * 1024 * 1024);

  TempDir dir("pio-");
  std::string out = make_fifo(dir, "out");
  std::string err = make_fifo(dir, "err");
  IoThread io;
  FifoReader out_reader(out, &expected);
  FifoReader err_reader(err, &expected);
  auto pio = create_io(io, StdioSpec{"", out, err}, method);

  // Both streams at once from one child: two copies share the loop.
  std::string n = std::to_string(last);
  pid_t child =
      spawn_child({"sh", "-c", "seq 1 " + n + " & seq 1 " + n + " >&2; wait"}, child_fds(*pio));
  pio->close_runtime_ends();
  REQUIRE(start_io(io, *pio).ok());

  auto out_result = out_reader.get(60s);
  auto err_result = err_reader.get(60s);
  CHECK(exited_ok(wait_child(child, 10s)));
  CHECK(out_result.bytes == expected.size());
  CHECK(out_result.first_mismatch == FifoReader::kNone);
  CHECK(err_result.bytes == expected.size());
  CHECK(err_result.first_mismatch == FifoReader::kNone);
  CHECK(wait_drained(io, *pio, 5s));
  CHECK(io.run([&] { return pio->copied_bytes(StdioStream::kStdout); }) == expected.size());
  CHECK(io.run([&] { return pio->copied_bytes(StdioStream::kStderr); }) == expected.size());
  destroy_io(io, pio);
}

TEST_CASE("10 bytes from a process that exits at once all arrive", "[stdio]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  TempDir dir("pio-");
  std::string out = make_fifo(dir, "out");
  IoThread io;
  for (int round = 0; round < 20; ++round) {
    FifoReader reader(out);
    auto pio = create_io(io, StdioSpec{"", out, ""}, method);
    REQUIRE(pio->runtime_stderr() == -1);
    REQUIRE(pio->runtime_stdin() == -1);
    pid_t child = spawn_child({"printf", "0123456789"}, child_fds(*pio));
    pio->close_runtime_ends();
    REQUIRE(start_io(io, *pio).ok());
    auto result = reader.get();
    CHECK(exited_ok(wait_child(child, 5s)));
    REQUIRE(result.text == "0123456789");
    CHECK(wait_drained(io, *pio, 2s));
    destroy_io(io, pio);
  }
}

TEST_CASE("a client opening its reader late still gets every byte", "[stdio]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  TempDir dir("pio-");
  std::string out = make_fifo(dir, "out");
  IoThread io;
  auto pio = create_io(io, StdioSpec{"", out, ""}, method);
  // Exactly one full pipe (64 KiB): the child finishes writing and exits while nobody
  // reads the FIFO yet.
  std::string expected = seq_text(12000) + std::string(65536 - 60894, '0');
  REQUIRE(expected.size() == 65536);
  pid_t child = spawn_child({"sh", "-c", "seq 1 12000; printf '%04642d' 0"}, child_fds(*pio));
  pio->close_runtime_ends();
  REQUIRE(start_io(io, *pio).ok());
  CHECK(exited_ok(wait_child(child, 5s)));
  std::this_thread::sleep_for(150ms);  // the shim probes for a reader meanwhile
  CHECK_FALSE(io.run([&] { return pio->drained(); }));
  // Nothing was pushed into the reader-less FIFO, where closing at EOF would lose it.
  CHECK(io.run([&] { return pio->copied_bytes(StdioStream::kStdout); }) == 0);

  FifoReader reader(out, &expected);
  auto result = reader.get();
  CHECK(result.bytes == expected.size());
  CHECK(result.first_mismatch == FifoReader::kNone);
  CHECK(wait_drained(io, *pio, 2s));
  destroy_io(io, pio);
}

TEST_CASE("stdin round trip through cat, CloseIO closes only the keeper", "[stdio]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  bool close_io_first = GENERATE(false, true);
  INFO("CloseIO before the client closes: " << close_io_first);
  TempDir dir("pio-");
  std::string in = make_fifo(dir, "in");
  std::string out = make_fifo(dir, "out");
  std::string sent;
  for (int i = 0; i < 2000; ++i) sent += "line " + std::to_string(i) + " through stdin\n";
  IoThread io;
  FifoReader reader(out, &sent);
  auto pio = create_io(io, StdioSpec{in, out, ""}, method);
  REQUIRE(pio->runtime_stdin() >= 0);
  pid_t child = spawn_child({"cat"}, child_fds(*pio));
  pio->close_runtime_ends();
  REQUIRE(start_io(io, *pio).ok());

  // The shim reads the stdin FIFO now, so a non-blocking writer open succeeds.
  int client = ::open(in.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(client >= 0);
  REQUIRE(::fcntl(client, F_SETFL, 0) == 0);
  std::size_t written = 0;
  while (written < sent.size()) {
    ssize_t n = ::write(client, sent.data() + written, sent.size() - written);
    REQUIRE(n > 0);
    written += static_cast<std::size_t>(n);
  }

  if (close_io_first) {
    io.run([&] { pio->close_stdin(); });
    // The client still holds its writer: no EOF yet.
    CHECK_FALSE(wait_child(child, 200ms).has_value());
    ::close(client);
  } else {
    ::close(client);
    // The keeper holds the FIFO open: cat must not see EOF before CloseIO.
    CHECK_FALSE(wait_child(child, 200ms).has_value());
    io.run([&] { pio->close_stdin(); });
  }
  CHECK(exited_ok(wait_child(child, 5s)));
  auto result = reader.get();
  CHECK(result.bytes == sent.size());
  CHECK(result.first_mismatch == FifoReader::kNone);
  CHECK(io.run([&] { return pio->copied_bytes(StdioStream::kStdin); }) == sent.size());
  CHECK(wait_drained(io, *pio, 2s));
  destroy_io(io, pio);
}

TEST_CASE("file:// sends stdout and stderr to one appending file", "[stdio]") {
  TempDir dir("pio-");
  std::string path = dir.sub("logs/nested/out.log");
  IoThread io;
  auto pio = create_io(io, StdioSpec{"", "file://" + path, "file://" + path});
  // Created before runc runs, parent dirs included.
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0644 & ~0022u));
  REQUIRE(::stat(dir.sub("logs/nested").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));

  pid_t child = spawn_child({"sh", "-c", "seq 1 100000; seq 1 100000 >&2"}, child_fds(*pio));
  pio->close_runtime_ends();
  REQUIRE(start_io(io, *pio).ok());
  CHECK(exited_ok(wait_child(child, 5s)));
  REQUIRE(wait_drained(io, *pio, 5s));
  destroy_io(io, pio);

  std::string expected = seq_text(100000);
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(static_cast<std::size_t>(st.st_size) == 2 * expected.size());

  // Appends: a second process adds to the same file.
  auto again = create_io(io, StdioSpec{"", "file://" + path, ""});
  pid_t second = spawn_child({"printf", "tail\n"}, child_fds(*again));
  again->close_runtime_ends();
  REQUIRE(start_io(io, *again).ok());
  CHECK(exited_ok(wait_child(second, 5s)));
  REQUIRE(wait_drained(io, *again, 5s));
  destroy_io(io, again);
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(static_cast<std::size_t>(st.st_size) == 2 * expected.size() + 5);
}

TEST_CASE("null IO: no pipes, nothing to drain", "[stdio]") {
  IoThread io;
  auto pio = create_io(io, StdioSpec{});
  CHECK(pio->is_null());
  CHECK(pio->runtime_stdin() == -1);
  CHECK(pio->runtime_stdout() == -1);
  CHECK(pio->runtime_stderr() == -1);
  CHECK(start_io(io, *pio).ok());
  CHECK(wait_drained(io, *pio, 1s));
  destroy_io(io, pio);
}

TEST_CASE("stdio schemes: unknown is an error, binary is not implemented yet", "[stdio]") {
  IoThread io;
  auto create = [&](StdioSpec spec) {
    std::unique_ptr<ProcessIO> pio;
    shim::Status status =
        io.run([&] { return ProcessIO::create(io.executor(), spec, 0, 0, test_logger(), &pio); });
    CHECK(pio == nullptr);
    return status;
  };
  const std::string before = fd_listing();
  shim::Status unknown = create(StdioSpec{"/x/in", "foo://bar/out", "/x/err"});
  CHECK(unknown.code() == shim::Code::kUnknown);
  CHECK(unknown.message() == "unknown STDIO scheme foo");
  CHECK(create(StdioSpec{"", "binary:///usr/bin/logger?a=b", ""}).code() ==
        shim::Code::kUnimplemented);
  CHECK(create(StdioSpec{"", "/a/b%zz", ""}).message() ==
        "unable to parse stdout uri: parse \"/a/b%zz\": invalid URL escape \"%zz\"");
  // No fd left open by the failed creates (an fd count once went 9 -> 7 here under ASan:
  // something else closed two of its own; compare the fds themselves).
  INFO("before:\n" << before << "now:\n" << fd_listing());
  CHECK(fds_opened_since(before).empty());

  shim::StdioUri uri;
  REQUIRE(shim::parse_stdio_uri("FILE:///var/log/a%20b.log?x=1#frag", &uri).ok());
  CHECK(uri.scheme == "file");
  CHECK(uri.path == "/var/log/a b.log");
  CHECK(uri.query == "x=1");
  REQUIRE(shim::parse_stdio_uri("/run/containerd/fifo/1/id-stdout", &uri).ok());
  CHECK(uri.scheme == "fifo");
  REQUIRE(shim::parse_stdio_uri("binary:///bin/logger?k=v", &uri).ok());
  CHECK(uri.scheme == "binary");
  CHECK(uri.path == "/bin/logger");
}

TEST_CASE("missing FIFOs are errors at start", "[stdio]") {
  TempDir dir("pio-");
  IoThread io;
  auto pio = create_io(io, StdioSpec{dir.sub("no-in"), "", ""});
  shim::Status status = start_io(io, *pio);
  CHECK_FALSE(status.ok());
  CHECK_THAT(status.message(), Catch::Contains("failed to open stdin fifo"));
  destroy_io(io, pio);

  pio = create_io(io, StdioSpec{"", dir.sub("no-out"), ""});
  status = start_io(io, *pio);
  CHECK_THAT(status.message(), Catch::Contains("no-out"));
  destroy_io(io, pio);
}

TEST_CASE("no fd leaks across 100 create/start/close cycles", "[stdio]") {
  TempDir dir("pio-");
  std::string in = make_fifo(dir, "in");
  std::string out = make_fifo(dir, "out");
  std::string err = make_fifo(dir, "err");
  IoThread io;
  // Two warm-up cycles first: the loop creates its own epoll, eventfd and timerfd lazily.
  int before = 0;
  std::string listing_before;
  for (int cycle = 0; cycle < 2 + 100; ++cycle) {
    if (cycle == 2) {
      io.drain();
      before = count_open_fds();
      listing_before = fd_listing();
    }
    // Every other cycle a client holds the output FIFOs, so the writers and copies start.
    int out_client = -1;
    int err_client = -1;
    if (cycle % 2 == 0) {
      out_client = ::open(out.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      err_client = ::open(err.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      REQUIRE(out_client >= 0);
      REQUIRE(err_client >= 0);
    }
    StdioSpec spec =
        cycle % 3 == 2 ? StdioSpec{in, "file://" + dir.sub("f.log"), ""} : StdioSpec{in, out, err};
    auto pio = create_io(io, spec);
    if (cycle % 4 != 3) {
      REQUIRE(start_io(io, *pio).ok());
      io.drain();
      std::this_thread::sleep_for(1ms);
      io.drain();
    }
    if (cycle % 5 == 0) {
      io.run([&] { pio->close(); });  // explicit close, then RAII again
    }
    destroy_io(io, pio);
    if (out_client >= 0) ::close(out_client);
    if (err_client >= 0) ::close(err_client);
  }
  io.drain();
  INFO("before:\n" << listing_before << "after:\n" << fd_listing());
  CHECK(count_open_fds() == before);
}

TEST_CASE("a client that vanishes mid-stream neither blocks the loop nor loses bytes", "[stdio]") {
  ::signal(SIGPIPE, SIG_IGN);  // as in the shim
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  const int last = 1'000'000;  // 6.9 MB
  const std::string expected = seq_text(last);
  TempDir dir("pio-");
  std::string out = make_fifo(dir, "out");
  IoThread io;
  auto pio = create_io(io, StdioSpec{"", out, ""}, method);
  pid_t child = spawn_child({"seq", "1", std::to_string(last)}, child_fds(*pio));
  pio->close_runtime_ends();

  std::uint64_t first_part = 1024 * 1024;
  {
    FifoReader first(out, &expected, 0, first_part);
    REQUIRE(start_io(io, *pio).ok());
    auto result = first.get();
    REQUIRE(result.bytes == first_part);
    REQUIRE(result.first_mismatch == FifoReader::kNone);
  }
  // Nobody reads now: the copy waits on the full FIFO; the loop stays free; the child
  // blocks on its full pipe instead of losing output.
  std::this_thread::sleep_for(100ms);
  CHECK(loop_responsive(io));
  CHECK_FALSE(wait_child(child, 100ms).has_value());
  CHECK_FALSE(io.run([&] { return pio->drained(); }));

  SECTION("a new reader (containerd after a restart) gets the rest, then EOF") {
    FifoReader second(out, &expected, first_part);
    auto rest = second.get();
    CHECK(exited_ok(wait_child(child, 10s)));
    // Byte-exact across the two readers: nothing dropped, nothing duplicated.
    CHECK(rest.bytes == expected.size() - first_part);
    CHECK(rest.first_mismatch == FifoReader::kNone);
    CHECK(wait_drained(io, *pio, 2s));
    CHECK(io.run([&] { return pio->copied_bytes(StdioStream::kStdout); }) == expected.size());
    destroy_io(io, pio);
  }
  SECTION("nobody comes back: the drain wait times out and close frees everything") {
    int fds_before_close = count_open_fds();
    CHECK_FALSE(wait_drained(io, *pio, 100ms));
    CHECK(loop_responsive(io));
    destroy_io(io, pio);
    CHECK(count_open_fds() < fds_before_close);
    // The child's pipe has no reader left: it ends (SIGPIPE/EPIPE) instead of hanging.
    auto status = wait_child(child, 5s);
    REQUIRE(status.has_value());
    CHECK(loop_responsive(io));
  }
}

TEST_CASE("a background child holding stdout: drain wait times out, close detaches", "[stdio]") {
  TempDir dir("pio-");
  std::string out = make_fifo(dir, "out");
  IoThread io;
  FifoReader reader(out);
  auto pio = create_io(io, StdioSpec{"", out, ""});
  // The shell exits at once; its background sleep keeps the pipe's write end.
  pid_t child = spawn_child({"sh", "-c", "echo hello; sleep 30 &"}, child_fds(*pio),
                            /*new_process_group=*/true);
  pio->close_runtime_ends();
  REQUIRE(start_io(io, *pio).ok());
  CHECK(exited_ok(wait_child(child, 5s)));
  CHECK_FALSE(wait_drained(io, *pio, 200ms));
  destroy_io(io, pio);
  // Closing our FIFO writer ends the client's stream although the pipe is still held.
  auto result = reader.get(5s);
  CHECK(result.text == "hello\n");
  ::kill(-child, SIGKILL);
}

}  // namespace
