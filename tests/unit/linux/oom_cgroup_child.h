// Real cgroup v1 OOM kills for tests (root, v1 memory controller): a forked child that
// touches memory on command, and a memory (and pids) cgroup of 8 MiB to move it into.
// Used by the OomWatcher tests and the process tier's TaskOOM ordering test.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "linux/cgroup_file.h"
#include "shim/fs.h"
#include "shim/linux/cgroup.h"

namespace oom_test {

using namespace std::chrono_literals;
using shim::CgroupVersion;

constexpr std::size_t kLimit = 8u << 20;
constexpr std::size_t kAllocation = 64u << 20;

// A forked child that, on command, touches 1 MiB (so its new memory cgroup has usage),
// and then 64 MiB.
class Allocator {
 public:
  Allocator() {
    int down[2];
    int up[2];
    REQUIRE(::pipe2(down, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(up, O_CLOEXEC) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(down[1]);
      ::close(up[0]);
      child(down[0], up[1]);
    }
    ::close(down[0]);
    ::close(up[1]);
    to_child_ = down[1];
    from_child_ = up[0];
  }
  ~Allocator() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(to_child_);
    ::close(from_child_);
  }

  pid_t pid() const { return pid_; }
  // Step 1: touch 1 MiB and answer.
  bool touch_a_little() {
    char byte = 1;
    return ::write(to_child_, &byte, 1) == 1 && ::read(from_child_, &byte, 1) == 1;
  }
  // Step 2: touch 64 MiB (it gets killed in an 8 MiB cgroup).
  void allocate() {
    char byte = 2;
    REQUIRE(::write(to_child_, &byte, 1) == 1);
  }
  // The wait status, or -1 if the child is still running after `limit`.
  int wait(std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        reaped_ = true;
        return status;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(2ms);
    }
  }

 private:
  // Only system calls after fork: the parent may have other threads.
  [[noreturn]] static void child(int in, int out) {
    char byte = 0;
    if (::read(in, &byte, 1) != 1) ::_exit(3);
    touch(1u << 20);
    if (::write(out, &byte, 1) != 1) ::_exit(3);
    if (::read(in, &byte, 1) != 1) ::_exit(3);
    touch(kAllocation);
    ::_exit(0);  // not killed: the test fails on this status
  }
  static void touch(std::size_t size) {
    void* memory =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) ::_exit(4);
    auto* bytes = static_cast<volatile char*>(memory);
    for (std::size_t i = 0; i < size; i += 4096) bytes[i] = 1;
  }

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool reaped_ = false;
};

// /sys/fs/cgroup/{memory,pids}/libshim-test-<unique>, removed again at the end.
class TestCgroups {
 public:
  // false (and nothing created) when the v1 memory controller is not usable here.
  bool create() {
    const std::string base = "/sys/fs/cgroup/memory";
    if (shim::host_cgroup_version() != CgroupVersion::kV1 ||
        !shim::path_exists(base + "/cgroup.event_control"))
      return false;
    name_ = fmt::format("libshim-test-{}-{}", ::getpid(),
                        std::chrono::steady_clock::now().time_since_epoch().count());
    memory_ = base + "/" + name_;
    if (::mkdir(memory_.c_str(), 0755) != 0) {
      memory_.clear();
      return false;
    }
    std::string pids = "/sys/fs/cgroup/pids/" + name_;
    if (shim::path_exists("/sys/fs/cgroup/pids/cgroup.procs") && ::mkdir(pids.c_str(), 0755) == 0)
      pids_ = pids;
    return true;
  }
  ~TestCgroups() {
    for (const std::string& dir : {memory_, pids_}) {
      if (dir.empty()) continue;
      for (int attempt = 0; attempt < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++attempt)
        std::this_thread::sleep_for(10ms);
    }
  }

  const std::string& memory() const { return memory_; }
  const std::string& pids() const { return pids_; }

  // 8 MiB for memory and memory+swap, then `pid` moved in.
  void limit_and_move(pid_t pid) {
    std::string limit = std::to_string(kLimit);
    REQUIRE(shim::write_control_file(memory_ + "/memory.limit_in_bytes", limit).ok());
    if (shim::path_exists(memory_ + "/memory.memsw.limit_in_bytes"))
      REQUIRE(shim::write_control_file(memory_ + "/memory.memsw.limit_in_bytes", limit).ok());
    REQUIRE(shim::write_control_file(memory_ + "/cgroup.procs", std::to_string(pid)).ok());
    if (!pids_.empty())
      REQUIRE(shim::write_control_file(pids_ + "/cgroup.procs", std::to_string(pid)).ok());
  }

  // rmdir now (the child must be gone); false if it did not work.
  bool remove() {
    bool ok = true;
    for (std::string* dir : {&memory_, &pids_}) {
      if (dir->empty()) continue;
      if (::rmdir(dir->c_str()) != 0)
        ok = false;
      else
        dir->clear();
    }
    return ok;
  }

 private:
  std::string name_;
  std::string memory_;
  std::string pids_;
};

}  // namespace oom_test
