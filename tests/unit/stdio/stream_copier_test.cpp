// StreamCopier with an output buffer: a writer thread on a real pipe, a real FIFO that
// nobody reads for a while (containerd away), then a reader that comes back. Records of
// 4 KiB carry their index, so order, loss and duplicates are all visible.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "stdio/stream_copier.h"
#include "stdio_test_helpers.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using shim::CopyMethod;
using shim::OutputBufferOptions;
using shim::OutputOverflow;
using shim::stdio::CopyBuffering;
using shim::stdio::CopyResult;
using shim::stdio::CopyTarget;
using shim::stdio::Fd;
using shim::stdio::OverflowEpisode;
using shim::stdio::StreamCopier;
using shim::test::IoThread;
using shim::test::TempDir;
using namespace stdio_test;

constexpr std::size_t kRecord = 4096;

std::string record(std::size_t index) {
  std::string text(kRecord, '.');
  char head[16];
  std::snprintf(head, sizeof(head), "%010zu", index);
  text.replace(0, 10, head);
  text.back() = '\n';
  return text;
}

std::string records(std::size_t count) {
  std::string text;
  text.reserve(count * kRecord);
  for (std::size_t i = 0; i < count; ++i) text += record(i);
  return text;
}

// A copy from a pipe (written by a thread, as a container process would) into a FIFO
// held as the shim holds it (our writer plus our never-reading keeper).
class Rig {
 public:
  Rig(OutputBufferOptions options, CopyMethod method, std::size_t count)
      : dir_("copier-"), fifo_(make_fifo(dir_, "out")), count_(count) {
    ::signal(SIGPIPE, SIG_IGN);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    Fd source(fds[0]);
    pipe_writer_ = Fd(fds[1]);
    REQUIRE(::fcntl(source.get(), F_SETFL, O_NONBLOCK) == 0);
    Fd keeper(::open(fifo_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    REQUIRE(keeper.valid());
    auto writer = std::make_shared<Fd>(::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    REQUIRE(writer->valid());
    if (options.spill_bytes > 0) options.spill_dir = dir_.path();
    CopyBuffering buffering{options, [this](const OverflowEpisode& episode) {
                              std::lock_guard lock(mu_);
                              episodes_.push_back(episode);
                            }};
    auto done = std::make_shared<std::promise<CopyResult>>();
    done_ = done->get_future();
    io_.run([&] {
      copier_ = StreamCopier::start(
          io_.executor(), "stdout", std::move(source), CopyTarget{writer, std::move(keeper)},
          method, [done](const CopyResult& result) { done->set_value(result); }, buffering);
    });
    writer_thread_ = std::thread([this] {
      for (std::size_t i = 0; i < count_; ++i) {
        std::string text = record(i);
        if (::write(pipe_writer_.get(), text.data(), text.size()) !=
            static_cast<ssize_t>(text.size()))
          break;
        written_.store(i + 1);
      }
      pipe_writer_.reset();  // EOF for the copy
    });
  }
  ~Rig() {
    // Closing our end of the pipe releases a writer blocked on it (EPIPE).
    io_.run([&] { copier_->cancel(); });
    if (writer_thread_.joinable()) writer_thread_.join();
  }

  std::size_t written() const { return written_.load(); }
  bool writer_done() const { return written() == count_; }
  // Waits until the writer wrote everything (true) or made no progress for `stall`.
  bool wait_writer(std::chrono::milliseconds stall, std::chrono::milliseconds limit = 20s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    std::size_t last = written();
    auto moved_at = std::chrono::steady_clock::now();
    while (!writer_done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
      if (written() != last) {
        last = written();
        moved_at = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - moved_at >= stall) {
        return false;
      }
    }
    return writer_done();
  }
  // The client's reader: opens the FIFO and reads to EOF.
  std::string read_all() {
    Fd reader(::open(fifo_.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(reader.valid());
    std::string out;
    char chunk[65536];
    while (true) {
      ssize_t n = ::read(reader.get(), chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      REQUIRE(n >= 0);
      if (n == 0) return out;
      out.append(chunk, static_cast<std::size_t>(n));
    }
  }
  CopyResult result() {
    REQUIRE(done_.wait_for(20s) == std::future_status::ready);
    return done_.get();
  }
  template <class Fn>
  auto on_loop(Fn fn) {
    return io_.run([&] { return fn(*copier_); });
  }
  std::vector<OverflowEpisode> episodes() {
    std::lock_guard lock(mu_);
    return episodes_;
  }

 private:
  TempDir dir_;
  std::string fifo_;
  std::size_t count_;
  IoThread io_;
  Fd pipe_writer_;
  std::shared_ptr<StreamCopier> copier_;
  std::future<CopyResult> done_;
  std::thread writer_thread_;
  std::atomic<std::size_t> written_{0};
  std::mutex mu_;
  std::vector<OverflowEpisode> episodes_;
};

TEST_CASE(
    "buffered copy: nobody reads, the writer goes on through memory and spill, a returning "
    "reader gets every byte in order, once",
    "[stdio][output-buffer]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  const std::size_t count = 1024;  // 4 MiB
  Rig rig(OutputBufferOptions{.memory_bytes = 256 * 1024, .spill_bytes = 8 << 20}, method, count);
  // Pipe 64 KiB + FIFO 64 KiB + 8.25 MiB of buffer: the writer never waits.
  REQUIRE(rig.wait_writer(3s));
  std::this_thread::sleep_for(100ms);
  std::uint64_t buffered = rig.on_loop([](StreamCopier& c) { return c.buffered(); });
  CHECK(buffered >= count * kRecord - 2 * 65536);
  CHECK(rig.on_loop([](StreamCopier& c) { return c.spilled(); }) > 0);
  CHECK(rig.on_loop([](StreamCopier& c) { return c.finished(); }) == false);

  std::string delivered = rig.read_all();
  const std::string expected = records(count);
  REQUIRE(delivered.size() == expected.size());
  CHECK(delivered == expected);
  CopyResult result = rig.result();
  CHECK(result.status.ok());
  CHECK(result.bytes == expected.size());
  CHECK(rig.on_loop([](StreamCopier& c) { return c.dropped(); }) == 0);
  CHECK(rig.episodes().empty());
}

TEST_CASE("buffered copy, block: at the bound the writer stalls and nothing is lost",
          "[stdio][output-buffer]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  const std::size_t count = 256;  // 1 MiB
  Rig rig(OutputBufferOptions{.memory_bytes = 64 * 1024, .spill_bytes = 0}, method, count);
  REQUIRE_FALSE(rig.wait_writer(300ms));
  // Pipe + FIFO + buffer, and one read in hand at most.
  CHECK(rig.written() * kRecord <= 4 * 65536);
  CHECK(rig.written() * kRecord >= 2 * 65536);
  CHECK(rig.on_loop([](StreamCopier& c) { return c.buffered(); }) >= 60 * 1024);
  std::string delivered = rig.read_all();
  const std::string expected = records(count);
  REQUIRE(delivered.size() == expected.size());
  CHECK(delivered == expected);
  CHECK(rig.result().status.ok());
  CHECK(rig.on_loop([](StreamCopier& c) { return c.dropped(); }) == 0);
  CHECK(rig.episodes().empty());
}

TEST_CASE(
    "buffered copy, drop: the writer never stalls, what was dropped is counted, the rest "
    "arrives in order, once",
    "[stdio][output-buffer]") {
  CopyMethod method = GENERATE(CopyMethod::kSplice, CopyMethod::kReadWrite);
  const std::size_t count = 512;  // 2 MiB
  Rig rig(
      OutputBufferOptions{
          .memory_bytes = 64 * 1024, .spill_bytes = 0, .overflow = OutputOverflow::kDrop},
      method, count);
  REQUIRE(rig.wait_writer(3s));
  std::this_thread::sleep_for(100ms);
  std::uint64_t dropped = rig.on_loop([](StreamCopier& c) { return c.dropped(); });
  CHECK(dropped > 0);
  auto episodes = rig.episodes();
  REQUIRE(episodes.size() == 1);
  CHECK(episodes[0].started);

  std::string delivered = rig.read_all();
  CopyResult result = rig.result();
  CHECK(result.status.ok());
  // Every byte is either delivered or counted as dropped, none twice.
  CHECK(delivered.size() + dropped == count * kRecord);
  CHECK(result.bytes == delivered.size());
  // Dropped are whole reads of whole 4 KiB records here: the delivered records are in
  // order, each once; the first ones (FIFO + buffer) without a gap.
  REQUIRE(delivered.size() % kRecord == 0);
  std::vector<std::size_t> indices;
  for (std::size_t at = 0; at < delivered.size(); at += kRecord) {
    std::string text = delivered.substr(at, kRecord);
    std::size_t index = std::stoul(text.substr(0, 10));
    REQUIRE(text == record(index));
    indices.push_back(index);
  }
  for (std::size_t i = 1; i < indices.size(); ++i) REQUIRE(indices[i] > indices[i - 1]);
  REQUIRE(indices.size() >= 32);
  for (std::size_t i = 0; i < 32; ++i) CHECK(indices[i] == i);
  episodes = rig.episodes();
  REQUIRE(episodes.size() == 2);
  CHECK_FALSE(episodes[1].started);
  CHECK(episodes[1].dropped == dropped);
  CHECK(episodes[1].dropped_total == dropped);
}

}  // namespace
