#include "process/posix_spawner.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "shim/unique_fd.h"

extern char** environ;

// The child shares the parent's memory until it execs: its code must not be instrumented
// (sanitizer shadow writes on a private stack) and must not be inlined into the parent.
#define LIBSHIM_CHILD_CODE __attribute__((no_sanitize("address", "undefined"), noinline))

namespace shim {

namespace {

// The kernel's sigset_t is 64 bits on every architecture we build for.
constexpr std::size_t kKernelSigsetSize = 8;
constexpr std::size_t kChildStackSize = 64 * 1024;

enum class ChildStep : int {
  kNone = 0,
  kParentDeathSignal,
  kSession,
  kProcessGroup,
  kFds,
  kCloseFds,
  kChdir,
  kSignalMask,
  kExec,
};

// Everything the child needs, prepared by the parent. The child only reads it, except
// for the scratch fds and the error fields, which the parent reads once clone() returns
// (with CLONE_VFORK that is after the child exec'd or exited).
struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // nullptr: keep the shim's
  const int* child_fds = nullptr;
  const int* parent_fds = nullptr;
  int* scratch_fds = nullptr;
  int fd_count = 0;
  int scratch_base = 0;  // temporary copies go at or above this fd number
  const unsigned* close_first = nullptr;
  const unsigned* close_last = nullptr;
  int close_count = 0;
  unsigned close_fallback_limit = 0;  // for kernels without close_range
  int parent_death_signal = 0;
  pid_t parent_pid = 0;
  bool new_session = false;
  bool new_process_group = false;

  ChildStep error_step = ChildStep::kNone;
  int error_errno = 0;
  int error_index = 0;
};

// ---- child side: raw system calls only ------------------------------------------------

[[noreturn]] LIBSHIM_CHILD_CODE void child_fail(ChildPlan* plan, ChildStep step, int index) {
  plan->error_errno = errno;
  plan->error_step = step;
  plan->error_index = index;
  for (;;) ::syscall(SYS_exit_group, 127);
}

LIBSHIM_CHILD_CODE void child_reset_signal_dispositions() {
  // An all-zero kernel sigaction is SIG_DFL with no flags and an empty mask on every
  // layout; 64 bytes covers the largest one.
  alignas(8) unsigned char default_action[64] = {};
  for (int sig = 1; sig < 65; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::syscall(SYS_rt_sigaction, sig, default_action, nullptr, kKernelSigsetSize);
  }
}

LIBSHIM_CHILD_CODE void child_set_parent_death_signal(ChildPlan* plan) {
  int sig = plan->parent_death_signal;
  if (sig == 0) return;
  if (::syscall(SYS_prctl, PR_SET_PDEATHSIG, sig, 0, 0, 0) < 0)
    child_fail(plan, ChildStep::kParentDeathSignal, 0);
  // The parent may have died before prctl: deliver the signal ourselves (it takes effect
  // when the mask is cleared below, or at once for SIGKILL).
  if (::syscall(SYS_getppid) != plan->parent_pid)
    ::syscall(SYS_kill, ::syscall(SYS_getpid), sig);
}

LIBSHIM_CHILD_CODE void child_set_session(ChildPlan* plan) {
  if (plan->new_session) {
    if (::syscall(SYS_setsid) < 0) child_fail(plan, ChildStep::kSession, 0);
    return;
  }
  if (plan->new_process_group && ::syscall(SYS_setpgid, 0, 0) < 0)
    child_fail(plan, ChildStep::kProcessGroup, 0);
}

LIBSHIM_CHILD_CODE void child_map_fds(ChildPlan* plan) {
  // Copy every source above all targets first, so a dup3 onto a target can never clobber
  // a source still needed (e.g. child 3 <- parent 4 and child 4 <- parent 3).
  for (int i = 0; i < plan->fd_count; ++i) {
    long copy = ::syscall(SYS_fcntl, plan->parent_fds[i], F_DUPFD_CLOEXEC, plan->scratch_base);
    if (copy < 0) child_fail(plan, ChildStep::kFds, i);
    plan->scratch_fds[i] = static_cast<int>(copy);
  }
  for (int i = 0; i < plan->fd_count; ++i) {
    if (::syscall(SYS_dup3, plan->scratch_fds[i], plan->child_fds[i], 0) < 0)
      child_fail(plan, ChildStep::kFds, i);
  }
}

LIBSHIM_CHILD_CODE void child_close_other_fds(ChildPlan* plan) {
  bool have_close_range = true;
  for (int i = 0; i < plan->close_count; ++i) {
    unsigned first = plan->close_first[i];
    unsigned last = plan->close_last[i];
    if (have_close_range) {
      if (::syscall(SYS_close_range, first, last, 0) == 0) continue;
      if (errno != ENOSYS) child_fail(plan, ChildStep::kCloseFds, i);
      have_close_range = false;
    }
    unsigned limit = last < plan->close_fallback_limit ? last : plan->close_fallback_limit;
    for (unsigned fd = first; fd <= limit; ++fd) ::syscall(SYS_close, fd);
  }
}

LIBSHIM_CHILD_CODE int child_main(void* arg) {
  auto* plan = static_cast<ChildPlan*>(arg);
  // Every signal is blocked here (the parent blocked them around clone): no handler of
  // the shim can run on this shared memory. Reset dispositions before unblocking.
  child_reset_signal_dispositions();
  child_set_parent_death_signal(plan);
  child_set_session(plan);
  child_map_fds(plan);
  child_close_other_fds(plan);
  if (plan->cwd != nullptr && ::syscall(SYS_chdir, plan->cwd) < 0)
    child_fail(plan, ChildStep::kChdir, 0);
  std::uint64_t empty_mask = 0;
  if (::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty_mask, nullptr, kKernelSigsetSize) < 0)
    child_fail(plan, ChildStep::kSignalMask, 0);
  ::syscall(SYS_execve, plan->path, plan->argv, plan->envp);
  child_fail(plan, ChildStep::kExec, 0);
}

// ---- parent side ----------------------------------------------------------------------

class ChildStack {
 public:
  ChildStack() {
    void* base = ::mmap(nullptr, kChildStackSize, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<char*>(base);
    // Guard page at the low end: an overflow faults instead of corrupting memory.
    ::mprotect(base_, static_cast<std::size_t>(::getpagesize()), PROT_NONE);
  }
  ~ChildStack() {
    if (base_ != nullptr) ::munmap(base_, kChildStackSize);
  }
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  bool ok() const { return base_ != nullptr; }
  void* top() const { return base_ + kChildStackSize; }  // stacks grow down

 private:
  char* base_ = nullptr;
};

struct FdPlan {
  std::vector<int> child_fds;
  std::vector<int> parent_fds;
  std::vector<int> scratch_fds;
  std::vector<unsigned> close_first;
  std::vector<unsigned> close_last;
  int scratch_base = 0;
  UniqueFd dev_null;
};

bool is_executable_file(const std::string& path) {
  struct stat st{};
  return ::access(path.c_str(), X_OK) == 0 && ::stat(path.c_str(), &st) == 0 &&
         S_ISREG(st.st_mode);
}

Status resolve_executable(const std::string& name, std::string* path) {
  if (name.empty()) return invalid_argument("spawn: empty executable path");
  if (name.find('/') != std::string::npos) {
    *path = name;
    return {};
  }
  const char* env_path = std::getenv("PATH");
  std::string_view dirs = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    std::size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    if (is_executable_file(candidate)) {
      *path = std::move(candidate);
      return {};
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return unknown(fmt::format("exec {}: {} (searched $PATH)", name, std::strerror(ENOENT)));
}

Status plan_fds(const SpawnRequest& request, FdPlan* plan) {
  std::vector<std::pair<int, int>> maps = request.fds;
  for (const auto& [child_fd, parent_fd] : maps) {
    if (child_fd < 0 || parent_fd < 0 || ::fcntl(parent_fd, F_GETFD) < 0) {
      return invalid_argument(fmt::format("spawn {}: map fd {} to child fd {}: {}",
                                          request.path, parent_fd, child_fd,
                                          std::strerror(EBADF)));
    }
  }
  std::sort(maps.begin(), maps.end());
  for (std::size_t i = 1; i < maps.size(); ++i) {
    if (maps[i].first == maps[i - 1].first) {
      return invalid_argument(
          fmt::format("spawn {}: child fd {} mapped twice", request.path, maps[i].first));
    }
  }
  for (int stdio = 0; stdio < 3; ++stdio) {
    bool mapped = std::any_of(maps.begin(), maps.end(),
                              [&](const auto& map) { return map.first == stdio; });
    if (mapped) continue;
    if (plan->dev_null.get() < 0) {
      int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      if (fd < 0) {
        return unknown(fmt::format("spawn {}: open /dev/null: {}", request.path,
                                   std::strerror(errno)));
      }
      plan->dev_null.reset(fd);
    }
    maps.emplace_back(stdio, plan->dev_null.get());
  }
  std::sort(maps.begin(), maps.end());

  int highest = 0;
  unsigned next_open = 0;  // first fd number not yet covered by a target
  for (const auto& [child_fd, parent_fd] : maps) {
    plan->child_fds.push_back(child_fd);
    plan->parent_fds.push_back(parent_fd);
    highest = std::max({highest, child_fd, parent_fd});
    auto target = static_cast<unsigned>(child_fd);
    if (target > next_open) {
      plan->close_first.push_back(next_open);
      plan->close_last.push_back(target - 1);
    }
    next_open = target + 1;
  }
  plan->close_first.push_back(next_open);
  plan->close_last.push_back(~0U);
  plan->scratch_fds.assign(maps.size(), -1);
  plan->scratch_base = highest + 1;
  return {};
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

unsigned open_file_limit() {
  struct rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return 65536;
  return static_cast<unsigned>(std::min<rlim_t>(limit.rlim_cur, 1U << 20));
}

std::string_view step_name(ChildStep step) {
  switch (step) {
    case ChildStep::kParentDeathSignal: return "set parent death signal";
    case ChildStep::kSession: return "setsid";
    case ChildStep::kProcessGroup: return "setpgid";
    case ChildStep::kFds: return "map fds";
    case ChildStep::kCloseFds: return "close fds";
    case ChildStep::kChdir: return "chdir";
    case ChildStep::kSignalMask: return "reset signal mask";
    case ChildStep::kExec: return "exec";
    case ChildStep::kNone: break;
  }
  return "?";
}

Status child_error(const SpawnRequest& request, const FdPlan& fds, const ChildPlan& plan) {
  const char* reason = std::strerror(plan.error_errno);
  switch (plan.error_step) {
    case ChildStep::kExec:
      return unknown(fmt::format("exec {}: {}", request.path, reason));
    case ChildStep::kChdir:
      return unknown(fmt::format("spawn {}: chdir {}: {}", request.path, request.cwd, reason));
    case ChildStep::kFds: {
      auto index = static_cast<std::size_t>(plan.error_index);
      return unknown(fmt::format("spawn {}: map fd {} to child fd {}: {}", request.path,
                                 fds.parent_fds.at(index), fds.child_fds.at(index), reason));
    }
    default:
      return unknown(
          fmt::format("spawn {}: {}: {}", request.path, step_name(plan.error_step), reason));
  }
}

// The child of a failed spawn has exited (exit_group 127): collect it unless a reaper
// already did (ECHILD), so a plain spawner leaves no zombie behind.
void reap_failed_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
  }
}

// Blocks every signal (glibc's internal ones too, hence the raw call) in the calling
// thread for the lifetime of the object, so no handler runs in the CLONE_VM child.
class AllSignalsBlocked {
 public:
  AllSignalsBlocked() {
    std::uint64_t all = ~std::uint64_t{0};
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &saved_, kKernelSigsetSize);
  }
  ~AllSignalsBlocked() {
    int saved_errno = errno;
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved_, nullptr, kKernelSigsetSize);
    errno = saved_errno;
  }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

 private:
  std::uint64_t saved_ = 0;
};

pid_t clone_child(ChildPlan* plan, void* stack_top, int* pidfd) {
  AllSignalsBlocked blocked;
  constexpr int kFlags = CLONE_VM | CLONE_VFORK | SIGCHLD;
  *pidfd = -1;
  pid_t pid = ::clone(child_main, stack_top, kFlags | CLONE_PIDFD, plan, pidfd);
  if (pid < 0 && errno == EINVAL) {
    *pidfd = -1;  // a kernel without CLONE_PIDFD (< 5.2)
    pid = ::clone(child_main, stack_top, kFlags, plan);
  }
  return pid;
}

}  // namespace

Status PosixSpawner::spawn(const SpawnRequest& request, SpawnedProcess* process) {
  *process = SpawnedProcess{};
  std::string path;
  if (Status status = resolve_executable(request.path, &path); !status.ok()) return status;
  FdPlan fds;
  if (Status status = plan_fds(request, &fds); !status.ok()) return status;

  std::vector<std::string> default_argv;
  if (request.argv.empty()) default_argv.push_back(request.path);
  std::vector<char*> argv = c_strings(request.argv.empty() ? default_argv : request.argv);
  std::vector<char*> envp;
  if (request.env) envp = c_strings(*request.env);

  ChildPlan plan;
  plan.path = path.c_str();
  plan.argv = argv.data();
  plan.envp = request.env ? envp.data() : environ;
  plan.cwd = request.cwd.empty() ? nullptr : request.cwd.c_str();
  plan.child_fds = fds.child_fds.data();
  plan.parent_fds = fds.parent_fds.data();
  plan.scratch_fds = fds.scratch_fds.data();
  plan.fd_count = static_cast<int>(fds.child_fds.size());
  plan.scratch_base = fds.scratch_base;
  plan.close_first = fds.close_first.data();
  plan.close_last = fds.close_last.data();
  plan.close_count = static_cast<int>(fds.close_first.size());
  plan.close_fallback_limit = open_file_limit();
  plan.parent_death_signal = request.parent_death_signal.value_or(0);
  plan.parent_pid = ::getpid();
  plan.new_session = request.setsid;
  plan.new_process_group = request.new_process_group;

  ChildStack stack;
  if (!stack.ok()) {
    return unknown(fmt::format("spawn {}: child stack: {}", request.path, std::strerror(errno)));
  }
  int pidfd = -1;
  pid_t pid = clone_child(&plan, stack.top(), &pidfd);
  if (pid < 0) {
    return unknown(fmt::format("spawn {}: clone: {}", request.path, std::strerror(errno)));
  }
  if (plan.error_step != ChildStep::kNone) {
    if (pidfd >= 0) ::close(pidfd);
    reap_failed_child(pid);
    process->pid = pid;
    return child_error(request, fds, plan);
  }
  process->pid = pid;
  process->handle = ProcessHandle(pid, pidfd);
  return {};
}

}  // namespace shim
