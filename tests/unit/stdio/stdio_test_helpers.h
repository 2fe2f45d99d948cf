// Helpers for the stdio tests: expected output, fd counting, writer children spawned on
// the runtime ends of the pipes, and a client-side FIFO reader thread.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/clock.h"
#include "shim/logger.h"
#include "shim/stdio/process_io.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"

namespace stdio_test {

using namespace std::chrono_literals;

// What `seq 1 last` prints.
inline std::string seq_text(int last) {
  std::string text;
  text.reserve(static_cast<std::size_t>(last) * 8);
  char digits[16];
  for (int i = 1; i <= last; ++i) {
    char* end = std::to_chars(digits, digits + sizeof(digits), i).ptr;
    *end++ = '\n';
    text.append(digits, end);
  }
  return text;
}

inline int count_open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  REQUIRE(dir != nullptr);
  int count = 0;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

// "fd -> target" lines, to show what leaked (without the fd this reads them through).
inline std::string fd_listing() {
  std::string listing;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return listing;
  const std::string own = std::to_string(::dirfd(dir));
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.' || entry->d_name == own) continue;
    char target[256] = {};
    std::string link = std::string("/proc/self/fd/") + entry->d_name;
    ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
    listing += std::string(entry->d_name) + " -> " + (n > 0 ? target : "?") + "\n";
  }
  ::closedir(dir);
  return listing;
}

// The fds of this process opened since `before` (a fd_listing()), as "fd -> target"
// lines: what a leak check must find empty. Fds closed meanwhile by others are not
// leaks (the process may hold transient fds of its own when `before` is taken).
inline std::string fds_opened_since(const std::string& before) {
  std::string opened;
  std::string now = fd_listing();
  std::size_t start = 0;
  while (start < now.size()) {
    std::size_t end = now.find('\n', start);
    std::string line = now.substr(start, end - start + 1);
    if (before.find(line) == std::string::npos) opened += line;
    start = end + 1;
  }
  return opened;
}

inline std::string make_fifo(const shim::test::TempDir& dir, const std::string& name) {
  std::string path = dir.sub(name);
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

inline shim::Logger test_logger() {
  static shim::SystemClock clock;
  return shim::Logger(std::make_shared<shim::CallbackLogSink>([](std::string_view) {}), clock);
}

// A child writing to the runtime ends of the pipes, as runc's container process would.
inline pid_t spawn_child(std::vector<std::string> argv, std::vector<std::pair<int, int>> fds,
                         bool new_process_group = false) {
  shim::SpawnRequest request;
  request.path = argv.front();
  request.argv = std::move(argv);
  request.fds = std::move(fds);
  request.new_process_group = new_process_group;
  shim::PosixSpawner spawner;
  shim::SpawnedProcess process;
  shim::Status status = spawner.spawn(request, &process);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return process.pid;
}

// What runc does with --console-socket: a new pty, the master sent over the socket (the
// connection is queued before anyone accepts), our copy of the master closed. Returns the
// slave, as the container process would hold it.
inline int runc_sends_console(const std::string& socket_path, bool raw = true) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  std::string name = ::ptsname(master);
  int slave = ::open(name.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(slave >= 0);
  if (raw) {
    termios t{};
    REQUIRE(::tcgetattr(slave, &t) == 0);
    ::cfmakeraw(&t);
    REQUIRE(::tcsetattr(slave, TCSANOW, &t) == 0);
  }
  int conn = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(conn >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::connect(conn, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  iovec iov{name.data(), name.size()};
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &master, sizeof(int));
  REQUIRE(::sendmsg(conn, &msg, 0) == static_cast<ssize_t>(name.size()));
  ::close(conn);
  ::close(master);
  return slave;
}

// The runtime ends of `pio`'s pipes as a child's fds 0-2 (for spawn_child).
inline std::vector<std::pair<int, int>> child_fds(const shim::ProcessIO& pio) {
  std::vector<std::pair<int, int>> fds;
  if (pio.runtime_stdin() >= 0) fds.emplace_back(0, pio.runtime_stdin());
  if (pio.runtime_stdout() >= 0) fds.emplace_back(1, pio.runtime_stdout());
  if (pio.runtime_stderr() >= 0) fds.emplace_back(2, pio.runtime_stderr());
  return fds;
}

// ProcessIO::wait_drained on the loop of `io`; the result as seen by the callback.
inline bool wait_drained(shim::test::IoThread& io, shim::ProcessIO& pio,
                         std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<bool>>();
  auto result = promise->get_future();
  io.run(
      [&] { pio.wait_drained(timeout, [promise](bool drained) { promise->set_value(drained); }); });
  REQUIRE(result.wait_for(timeout + 5s) == std::future_status::ready);
  return result.get();
}

// waitpid with a deadline; nullopt while the child still runs.
inline std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(2ms);
  }
}

inline bool exited_ok(const std::optional<int>& status) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

// The client's end of an output FIFO, as containerd/ctr hold it: a blocking reader on
// its own thread, reading to EOF (or until `stop_after` bytes, then closing). With
// `expected`, every byte is compared with expected[expected_offset + position].
class FifoReader {
 public:
  static constexpr std::uint64_t kNone = UINT64_MAX;
  struct Result {
    std::uint64_t bytes = 0;
    std::uint64_t first_mismatch = kNone;  // offset into `expected`
    std::string text;                      // the first 4 KiB
    int open_errno = 0;
  };

  explicit FifoReader(std::string path, const std::string* expected = nullptr,
                      std::uint64_t expected_offset = 0, std::uint64_t stop_after = kNone)
      : path_(std::move(path)),
        expected_(expected),
        expected_offset_(expected_offset),
        stop_after_(stop_after) {
    thread_ = std::thread([this] { result_.set_value(run()); });
  }
  ~FifoReader() {
    // A reader still blocked in open() is released by a writer coming and going.
    if (!done_.load()) {
      int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
    thread_.join();
  }

  // Waits for the reader to finish; throws on timeout.
  Result get(std::chrono::milliseconds timeout = 20s) {
    auto future = result_.get_future();
    if (future.wait_for(timeout) != std::future_status::ready) {
      throw std::runtime_error("FifoReader: no EOF in time on " + path_);
    }
    return future.get();
  }

 private:
  Result run() {
    Result result;
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      result.open_errno = errno;
      done_ = true;
      return result;
    }
    std::vector<char> buffer(128 * 1024);
    while (result.bytes < stop_after_) {
      std::size_t want = static_cast<std::size_t>(
          std::min<std::uint64_t>(buffer.size(), stop_after_ - result.bytes));
      ssize_t n = ::read(fd, buffer.data(), want);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      check(result, buffer.data(), static_cast<std::size_t>(n));
      std::size_t keep = std::min<std::size_t>(
          static_cast<std::size_t>(n), 4096 - std::min<std::size_t>(4096, result.text.size()));
      result.text.append(buffer.data(), keep);
      result.bytes += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
    done_ = true;
    return result;
  }

  void check(Result& result, const char* data, std::size_t size) const {
    if (expected_ == nullptr || result.first_mismatch != kNone) return;
    std::uint64_t at = expected_offset_ + result.bytes;
    if (at + size <= expected_->size() && std::memcmp(expected_->data() + at, data, size) == 0) {
      return;
    }
    for (std::size_t i = 0; i < size; ++i, ++at) {
      if (at >= expected_->size() || (*expected_)[at] != data[i]) {
        result.first_mismatch = at;
        return;
      }
    }
  }

  std::string path_;
  const std::string* expected_;
  std::uint64_t expected_offset_;
  std::uint64_t stop_after_;
  std::atomic<bool> done_{false};
  std::promise<Result> result_;
  std::thread thread_;
};

}  // namespace stdio_test
