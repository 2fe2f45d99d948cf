// Cheap short-lived test processes for the reaper tests.
//
// They are created with clone(CLONE_VM) on private stacks instead of fork(): no page-table
// copy and no sanitizer fork hooks (under ASan a fork costs ~10 ms, so a thousand forks
// would take longer than the whole unit suite may). They share our memory, so they run
// raw system calls only, in uninstrumented functions, and read their instructions from a
// Recipe that outlives them.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <deque>
#include <stdexcept>

#define SHIM_TEST_CLONE_CODE __attribute__((no_sanitize("address", "undefined"), noinline))

namespace shim_test {

// How a test process ends, and the status the reaper must report for it.
struct Ending {
  int exit_code = 0;
  int signal = 0;  // when set: killed by it (choose signals without core dumps)
  int expected_status() const { return signal != 0 ? 128 + signal : exit_code; }
};

class ProcessFactory {
 public:
  explicit ProcessFactory(std::size_t capacity) : capacity_(capacity) {
    void* base = ::mmap(nullptr, capacity * kStackSize, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) throw std::runtime_error("mmap test stacks");
    stacks_ = static_cast<char*>(base);
  }
  // The stacks go only once every process is gone (else they stay: the test process
  // exits soon anyway).
  ~ProcessFactory() {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0)
      ::munmap(stacks_, capacity_ * kStackSize);
  }
  ProcessFactory(const ProcessFactory&) = delete;
  ProcessFactory& operator=(const ProcessFactory&) = delete;

  // Every later process closes `fd` first: the write end of a release pipe, which must
  // not stay open in the processes waiting for its EOF (they get a copy of our fd table).
  void close_in_children(int fd) { close_fd_ = fd; }

  // A child that ends as `ending`, at once or, with `release_fd` >= 0, once a read on it
  // returns (EOF when every write end is closed).
  pid_t start(Ending ending, int release_fd = -1) {
    Recipe& recipe = recipes_.emplace_back();
    recipe.ending = ending;
    recipe.release_fd = release_fd;
    recipe.close_fd = close_fd_;
    return launch(recipe);
  }

  // A child that starts a grandchild (ending `grandchild` after `release_fd` releases
  // it), writes {tag, grandchild pid} to `report_fd` and ends as `ending` at once, so the
  // grandchild is reparented to the subreaper.
  pid_t start_with_grandchild(Ending ending, Ending grandchild, int release_fd, int report_fd,
                              int tag) {
    Recipe& inner = recipes_.emplace_back();
    inner.ending = grandchild;
    inner.release_fd = release_fd;
    inner.stack_top = next_stack();
    Recipe& outer = recipes_.emplace_back();
    outer.ending = ending;
    outer.grandchild = &inner;
    outer.report_fd = report_fd;
    outer.tag = tag;
    outer.close_fd = close_fd_;
    return launch(outer);
  }

 private:
  static constexpr std::size_t kStackSize = 16 * 1024;

  struct Recipe {
    Ending ending;
    int release_fd = -1;
    int report_fd = -1;
    int tag = 0;
    int close_fd = -1;
    Recipe* grandchild = nullptr;
    void* stack_top = nullptr;
  };

  SHIM_TEST_CLONE_CODE static int run(void* arg) {
    auto* recipe = static_cast<Recipe*>(arg);
    if (recipe->close_fd >= 0) ::syscall(SYS_close, recipe->close_fd);
    if (recipe->grandchild != nullptr) {
      Recipe* inner = recipe->grandchild;
      int pid = ::clone(run, inner->stack_top, CLONE_VM | SIGCHLD, inner);
      int message[2] = {recipe->tag, pid};
      ::syscall(SYS_write, recipe->report_fd, message, sizeof(message));
    }
    if (recipe->release_fd >= 0) {
      char byte;  // no retry on EINTR: errno is shared with our thread, and no handler runs
      ::syscall(SYS_read, recipe->release_fd, &byte, 1);
    }
    if (recipe->ending.signal != 0) ::syscall(SYS_kill, ::syscall(SYS_getpid), recipe->ending.signal);
    ::syscall(SYS_exit_group, recipe->ending.signal != 0 ? 254 : recipe->ending.exit_code);
    return 0;
  }

  void* next_stack() {
    if (used_ == capacity_) throw std::runtime_error("ProcessFactory: out of stacks");
    return stacks_ + (++used_) * kStackSize;  // top of stack number used_-1
  }

  pid_t launch(Recipe& recipe) {
    recipe.stack_top = recipe.stack_top != nullptr ? recipe.stack_top : next_stack();
    pid_t pid = ::clone(run, recipe.stack_top, CLONE_VM | SIGCHLD, &recipe);
    if (pid < 0) throw std::runtime_error("clone test process");
    return pid;
  }

  std::size_t capacity_;
  std::size_t used_ = 0;
  int close_fd_ = -1;
  char* stacks_ = nullptr;
  std::deque<Recipe> recipes_;  // stable addresses: the processes read them
};

}  // namespace shim_test
