// OutputBuffer: memory, then a spill file, then memory again, in order, exactly once,
// within its bounds; fed from real pipes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "stdio/output_buffer.h"
#include "stdio_test_helpers.h"
#include "support/temp_dir.h"

namespace {

using shim::OutputBufferOptions;
using shim::stdio::Fd;
using shim::stdio::OutputBuffer;
using shim::test::TempDir;
using namespace stdio_test;

struct PipePair {
  Fd read_end;
  Fd write_end;
  PipePair() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0);
    read_end = Fd(fds[0]);
    write_end = Fd(fds[1]);
  }
};

// Writes `text` into the pipe piecewise and has the buffer read it all.
void feed(OutputBuffer& buffer, PipePair& pipe, const std::string& text) {
  std::size_t at = 0;
  while (at < text.size()) {
    ssize_t w = ::write(pipe.write_end.get(), text.data() + at,
                        std::min<std::size_t>(text.size() - at, 60000));
    REQUIRE(w > 0);
    at += static_cast<std::size_t>(w);
    while (true) {
      ssize_t r = buffer.read_from(pipe.read_end.get());
      if (r < 0 && errno == EAGAIN) break;
      REQUIRE(r > 0);
    }
  }
}

// Takes up to `max` bytes off the front, `step` bytes at a time at most.
std::string drain(OutputBuffer& buffer, std::size_t max, std::size_t step = 10000) {
  std::string out;
  while (out.size() < max) {
    std::span<const char> front;
    REQUIRE(buffer.front(&front).ok());
    if (front.empty()) break;
    std::size_t n = std::min({front.size(), step, max - out.size()});
    out.append(front.data(), n);
    buffer.consume(n);
  }
  return out;
}

TEST_CASE("output buffer: memory, then the spill file, then memory, order kept, exactly once",
          "[stdio][output-buffer]") {
  TempDir dir("obuf-");
  OutputBuffer buffer(OutputBufferOptions{
      .memory_bytes = 200'000, .spill_bytes = 700'000, .spill_dir = dir.path()});
  REQUIRE(buffer.capacity() == 900'000);
  PipePair pipe;
  const std::string text = seq_text(150'000);  // 938,895 bytes
  std::string delivered;

  feed(buffer, pipe, text.substr(0, 500'000));
  CHECK(buffer.size() == 500'000);
  CHECK(buffer.memory_size() == 200'000);
  CHECK(buffer.spill_size() == 300'000);
  REQUIRE(buffer.has_spill_file());
  // Unnamed (O_TMPFILE or unlinked) and close-on-exec.
  CHECK((::fcntl(buffer.spill_fd(), F_GETFD) & FD_CLOEXEC) != 0);
  char link[512] = {};
  REQUIRE(::readlink(fmt::format("/proc/self/fd/{}", buffer.spill_fd()).c_str(), link,
                     sizeof(link) - 1) > 0);
  CHECK(std::string(link).find("(deleted)") != std::string::npos);

  // Memory drains first; while the spill holds bytes, new ones go behind them.
  delivered += drain(buffer, 150'000);
  feed(buffer, pipe, text.substr(500'000, 300'000));
  CHECK(buffer.memory_size() < 200'000);
  CHECK(buffer.spill_size() == 600'000);
  delivered += drain(buffer, 400'000, 7'000);
  // Around the ring: more in than the file's size over time.
  feed(buffer, pipe, text.substr(800'000));
  delivered += drain(buffer, text.size());
  CHECK(buffer.empty());
  CHECK(buffer.spill_size() == 0);
  REQUIRE(delivered.size() == text.size());
  CHECK(delivered == text);
  CHECK(buffer.spilled_bytes() >= 600'000);
  CHECK(buffer.peak_size() <= buffer.capacity());
  // Empty again: the ring starts over and the file gave its space back.
  struct stat st {};
  REQUIRE(::fstat(buffer.spill_fd(), &st) == 0);
  CHECK(st.st_size == 0);
  // And memory is used again first.
  feed(buffer, pipe, text.substr(0, 1000));
  CHECK(buffer.memory_size() == 1000);
  CHECK(buffer.spill_size() == 0);
  CHECK(drain(buffer, 1000) == text.substr(0, 1000));
}

TEST_CASE("output buffer: bounds: room() reaches 0 and reads stop there",
          "[stdio][output-buffer]") {
  TempDir dir("obuf-");
  PipePair pipe;
  const std::string text = seq_text(100'000);  // 588,895 bytes
  SECTION("memory and spill") {
    OutputBuffer buffer(OutputBufferOptions{
        .memory_bytes = 100'000, .spill_bytes = 150'000, .spill_dir = dir.path()});
    std::size_t written = 0;
    while (written < 200'000) {
      ssize_t w = ::write(pipe.write_end.get(), text.data() + written, 50'000);
      REQUIRE(w > 0);
      written += static_cast<std::size_t>(w);
      while (buffer.room() > 0) {
        ssize_t r = buffer.read_from(pipe.read_end.get());
        if (r < 0) break;
      }
    }
    ssize_t w = ::write(pipe.write_end.get(), text.data() + written, 60'000);
    REQUIRE(w > 0);
    written += static_cast<std::size_t>(w);
    while (buffer.room() > 0) REQUIRE(buffer.read_from(pipe.read_end.get()) > 0);
    CHECK(buffer.size() == 250'000);
    CHECK(buffer.room() == 0);
    errno = 0;
    CHECK(buffer.read_from(pipe.read_end.get()) == -1);
    CHECK(errno == ENOBUFS);
    CHECK(drain(buffer, 250'000) == text.substr(0, 250'000));
  }
  SECTION("memory only without a spill dir") {
    OutputBuffer buffer(OutputBufferOptions{.memory_bytes = 100'000, .spill_bytes = 1'000'000});
    CHECK(buffer.capacity() == 100'000);
    REQUIRE(::write(pipe.write_end.get(), text.data(), 65'536) == 65'536);
    while (buffer.room() > 0) {
      if (buffer.read_from(pipe.read_end.get()) < 0) {
        REQUIRE(errno == EAGAIN);
        REQUIRE(::write(pipe.write_end.get(), text.data() + buffer.size(), 50'000) > 0);
      }
    }
    CHECK(buffer.size() == 100'000);
    CHECK_FALSE(buffer.has_spill_file());
    CHECK(drain(buffer, 200'000) == text.substr(0, 100'000));
  }
  SECTION("a spill dir that cannot hold a file: memory only, the reason kept") {
    OutputBuffer buffer(OutputBufferOptions{
        .memory_bytes = 10'000, .spill_bytes = 1'000'000, .spill_dir = dir.sub("missing")});
    REQUIRE(::write(pipe.write_end.get(), text.data(), 30'000) == 30'000);
    while (buffer.read_from(pipe.read_end.get()) > 0) {
    }
    // The first spill failed: the bound fell back to memory.
    CHECK(errno == ENOBUFS);
    CHECK(buffer.capacity() == 10'000);
    CHECK(buffer.room() == 0);
    CHECK_FALSE(buffer.spill_error().empty());
    CHECK(drain(buffer, 30'000) == text.substr(0, 10'000));
  }
}

TEST_CASE("output buffer: append goes behind what is spilled", "[stdio][output-buffer]") {
  TempDir dir("obuf-");
  OutputBuffer buffer(
      OutputBufferOptions{.memory_bytes = 0, .spill_bytes = 100'000, .spill_dir = dir.path()});
  REQUIRE(buffer.append("abc", 3).ok());  // at empty: memory, above its bound of 0
  PipePair pipe;
  REQUIRE(::write(pipe.write_end.get(), "defg", 4) == 4);
  REQUIRE(buffer.read_from(pipe.read_end.get()) == 4);  // memory is full: spilled
  CHECK(buffer.spill_size() == 4);
  REQUIRE(buffer.append("hij", 3).ok());
  CHECK(buffer.spill_size() == 7);
  CHECK(drain(buffer, 100, 2) == "abcdefghij");
}

}  // namespace
