#include "process/posix_spawner.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sched.h>  // struct clone_args

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "gocompat/go_compat.h"
#include "process/child_container.h"
#include "process/child_error.h"
#include "process/child_settings.h"
#include "process/spawn_child.h"
#include "shim/unique_fd.h"

extern char** environ;

namespace shim {
namespace {

using spawn::ChildErrorContext;
using spawn::ChildPlan;
using spawn::ChildReport;
using spawn::ChildSettings;
using spawn::ChildStep;
using spawn::kKernelSigsetSize;

constexpr std::size_t kChildStackSize = 64 * 1024;

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
  std::vector<int> child_fd_flags;
  std::vector<int> scratch_fds;
  std::vector<unsigned> close_first;
  std::vector<unsigned> close_last;
  int scratch_base = 0;
  UniqueFd dev_null;
};

// The pipes of a forked child: its reports (errors, "ready") and, when held, its gate.
struct ForkPipes {
  UniqueFd report_read, report_write;
  UniqueFd gate_read, gate_write;
};

Status check_fd_maps(const SpawnRequest& request, std::vector<std::pair<int, int>>* maps) {
  for (const auto& [child_fd, parent_fd] : *maps) {
    if (child_fd < 0 || parent_fd < 0 || ::fcntl(parent_fd, F_GETFD) < 0) {
      return invalid_argument(fmt::format("spawn {}: map fd {} to child fd {}: {}", request.path,
                                          parent_fd, child_fd, std::strerror(EBADF)));
    }
  }
  std::sort(maps->begin(), maps->end());
  for (std::size_t i = 1; i < maps->size(); ++i) {
    if ((*maps)[i].first == (*maps)[i - 1].first) {
      return invalid_argument(
          fmt::format("spawn {}: child fd {} mapped twice", request.path, (*maps)[i].first));
    }
  }
  return {};
}

Status add_dev_null(const SpawnRequest& request, std::vector<std::pair<int, int>>* maps,
                    FdPlan* plan) {
  for (int stdio = 0; stdio < 3; ++stdio) {
    bool mapped = std::any_of(maps->begin(), maps->end(),
                              [&](const auto& map) { return map.first == stdio; });
    if (mapped) continue;
    if (plan->dev_null.get() < 0) {
      int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      if (fd < 0)
        return unknown(
            fmt::format("spawn {}: open /dev/null: {}", request.path, std::strerror(errno)));
      plan->dev_null.reset(fd);
    }
    maps->emplace_back(stdio, plan->dev_null.get());
  }
  return {};
}

// `extra`: the forked child's report/gate pipe ends, mapped close-on-exec above the
// request's fds; their child numbers are returned in `extra_targets`.
Status plan_fds(const SpawnRequest& request, const std::vector<int>& extra, FdPlan* plan,
                std::vector<int>* extra_targets) {
  std::vector<std::pair<int, int>> maps = request.fds;
  if (Status s = check_fd_maps(request, &maps); !s.ok()) return s;
  if (Status s = add_dev_null(request, &maps, plan); !s.ok()) return s;
  std::sort(maps.begin(), maps.end());
  int next_target = maps.back().first + 1;
  std::vector<int> flags(maps.size(), 0);
  for (int fd : extra) {
    extra_targets->push_back(next_target);
    maps.emplace_back(next_target++, fd);
    flags.push_back(O_CLOEXEC);
  }

  int highest = 0;
  unsigned next_open = 0;  // first fd number not yet covered by a target
  for (std::size_t i = 0; i < maps.size(); ++i) {
    auto [child_fd, parent_fd] = maps[i];
    plan->child_fds.push_back(child_fd);
    plan->parent_fds.push_back(parent_fd);
    plan->child_fd_flags.push_back(flags[i]);
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
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 65536;
  return static_cast<unsigned>(std::min<rlim_t>(limit.rlim_cur, 1U << 20));
}

// The child of a failed spawn has exited (exit_group 127): collect it unless a reaper
// already did (ECHILD), so a plain spawner leaves no zombie behind.
void reap_failed_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
  }
}

// Blocks every signal (glibc's internal ones too, hence the raw call) in the calling
// thread for the lifetime of the object, so no handler runs in the child.
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

// CLONE_VM|CLONE_VFORK on a private stack: no page-table copy, the parent resumes once
// the child exec'd; the child reports errors in the shared plan.
pid_t vfork_child(ChildPlan* plan, void* stack_top, int* pidfd) {
  AllSignalsBlocked blocked;
  constexpr int kFlags = CLONE_VM | CLONE_VFORK | SIGCHLD;
  *pidfd = -1;
  pid_t pid = ::clone(spawn::child_main, stack_top, kFlags | CLONE_PIDFD, plan, pidfd);
  if (pid < 0 && errno == EINVAL) {
    *pidfd = -1;  // a kernel without CLONE_PIDFD (< 5.2)
    pid = ::clone(spawn::child_main, stack_top, kFlags, plan);
  }
  return pid;
}

// Enters a pid namespace for the calling thread's next children and leaves it again: a
// process is created in a pid namespace, it cannot move into one.
class PidNamespaceForChildren {
 public:
  Status enter(int pidfd) {
    own_.reset(::open("/proc/thread-self/ns/pid", O_RDONLY | O_CLOEXEC));
    if (own_.get() < 0)
      return unknown(fmt::format("open own pid namespace: {}", std::strerror(errno)));
    if (::setns(pidfd, CLONE_NEWPID) < 0) {
      own_.reset();
      return unknown(fmt::format("join pid namespace: {}", std::strerror(errno)));
    }
    return {};
  }
  // A new pid namespace for the next children: clone(2) refuses CLONE_NEWPID with
  // CLONE_PARENT on the kernels whose copy_process() checks the pair; unshare(2) has no
  // such check.
  Status enter_new() {
    own_.reset(::open("/proc/thread-self/ns/pid", O_RDONLY | O_CLOEXEC));
    if (own_.get() < 0)
      return unknown(fmt::format("open own pid namespace: {}", std::strerror(errno)));
    if (::unshare(CLONE_NEWPID) < 0) {
      own_.reset();
      return unknown(fmt::format("new pid namespace: {}", std::strerror(errno)));
    }
    return {};
  }
  ~PidNamespaceForChildren() {
    if (own_.get() >= 0) ::setns(own_.get(), CLONE_NEWPID);  // our own: cannot fail
  }

 private:
  UniqueFd own_;
};

// clone3 without CLONE_VM (fork semantics), for new namespaces and held children: the
// child runs on its own copy of memory and reports through a pipe.
pid_t fork_child(ChildPlan* plan, int new_namespaces, bool clone_parent, int* pidfd) {
  AllSignalsBlocked blocked;
  struct clone_args args {};
  args.flags = static_cast<std::uint64_t>(new_namespaces) | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  if (clone_parent) {
    // clone3 takes no exit signal with CLONE_PARENT: the child gets ours (SIGCHLD, as
    // our parent made us), and it goes to our parent.
    args.flags |= CLONE_PARENT;
    args.exit_signal = 0;
  }
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) spawn::child_main(plan);  // never returns
  return static_cast<pid_t>(pid);
}

// The next report of a forked child; step kNone at EOF (it exec'd, or died).
ChildReport read_report(int fd) {
  ChildReport report;
  char* bytes = reinterpret_cast<char*>(&report);
  std::size_t done = 0;
  while (done < sizeof report) {
    ssize_t n = ::read(fd, bytes + done, sizeof report - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ChildReport{};
    done += static_cast<std::size_t>(n);
  }
  return report;
}

Status make_pipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return unknown(fmt::format("pipe: {}", std::strerror(errno)));
  read_end->reset(fds[0]);
  write_end->reset(fds[1]);
  return {};
}

bool needs_fork(const SpawnRequest& request) {
  return request.hold || request.new_namespaces != 0 || request.join_namespaces != 0 ||
         !request.root.empty() || spawn::has_container_fields(request);
}

ChildErrorContext error_context(const SpawnRequest& request, const FdPlan& fds,
                                const ChildSettings& settings, const ChildPlan& plan) {
  return ChildErrorContext{request,           fds.parent_fds,
                           fds.child_fds,     settings.candidates(),
                           plan.cgroup_procs, plan.cgroup_proc_count};
}

Status spawn_vforked(const SpawnRequest& request, ChildPlan& plan, const FdPlan& fds,
                     const ChildSettings& settings, SpawnedProcess* process) {
  ChildStack stack;
  if (!stack.ok())
    return unknown(fmt::format("spawn {}: child stack: {}", request.path, std::strerror(errno)));
  int pidfd = -1;
  pid_t pid = vfork_child(&plan, stack.top(), &pidfd);
  if (pid < 0)
    return unknown(fmt::format("spawn {}: clone: {}", request.path, std::strerror(errno)));
  process->pid = pid;
  if (plan.error_step != ChildStep::kNone) {
    if (pidfd >= 0) ::close(pidfd);
    reap_failed_child(pid);
    return child_error(error_context(request, fds, settings, plan),
                       ChildReport{plan.error_step, plan.error_errno, plan.error_index});
  }
  process->handle = ProcessHandle(pid, pidfd);
  return {};
}

Status spawn_forked(const SpawnRequest& request, ChildPlan& plan, const FdPlan& fds,
                    const ChildSettings& settings, int pid_namespace_fd, ForkPipes& pipes,
                    SpawnedProcess* process) {
  int pidfd = -1;
  pid_t pid = -1;
  {
    PidNamespaceForChildren pid_namespace;
    if ((request.join_namespaces & CLONE_NEWPID) != 0) pid_namespace_fd = request.join_pidfd;
    if (pid_namespace_fd >= 0) {
      if (Status s = pid_namespace.enter(pid_namespace_fd); !s.ok()) {
        return unknown(fmt::format("spawn {}: {}", request.path, s.message()));
      }
    }
    int new_namespaces = request.new_namespaces;
    if (request.clone_parent && (new_namespaces & CLONE_NEWPID) != 0) {
      if (Status s = pid_namespace.enter_new(); !s.ok()) {
        return unknown(fmt::format("spawn {}: {}", request.path, s.message()));
      }
      new_namespaces &= ~CLONE_NEWPID;
    }
    pid = fork_child(&plan, new_namespaces, request.clone_parent, &pidfd);
  }
  if (pid < 0)
    return unknown(fmt::format("spawn {}: clone3: {}", request.path, std::strerror(errno)));
  process->pid = pid;
  pipes.report_write.reset();  // EOF once the child exec'd or died
  pipes.gate_read.reset();
  ChildReport report = read_report(pipes.report_read.get());
  bool ready = report.step == ChildStep::kReady;
  if (!ready && (report.step != ChildStep::kNone || request.hold)) {
    if (pidfd >= 0) ::close(pidfd);
    reap_failed_child(pid);
    if (report.step == ChildStep::kNone)
      return unknown(fmt::format("spawn {}: the child died", request.path));
    return child_error(error_context(request, fds, settings, plan), report);
  }
  process->handle = ProcessHandle(pid, pidfd);
  if (ready) {
    // The path it will exec: the search's find (the ready report names it), else ours.
    const auto& candidates = settings.candidates();
    auto found = static_cast<std::size_t>(report.index);
    std::string path =
        report.index >= 0 && found < candidates.size() ? candidates[found] : request.path;
    process->gate =
        ProcessGate(pipes.gate_write.release(), pipes.report_read.release(), std::move(path));
  }
  return {};
}

// The plan's fields that come straight from the request and the fd plan.
void fill_plan(const SpawnRequest& request, FdPlan& fds, ChildPlan* plan) {
  plan->cwd = request.cwd.empty() ? nullptr : request.cwd.c_str();
  plan->root = request.root.empty() ? nullptr : request.root.c_str();
  plan->child_fds = fds.child_fds.data();
  plan->parent_fds = fds.parent_fds.data();
  plan->child_fd_flags = fds.child_fd_flags.data();
  plan->scratch_fds = fds.scratch_fds.data();
  plan->fd_count = static_cast<int>(fds.child_fds.size());
  plan->scratch_base = fds.scratch_base;
  plan->close_first = fds.close_first.data();
  plan->close_last = fds.close_last.data();
  plan->close_count = static_cast<int>(fds.close_first.size());
  plan->close_fallback_limit = open_file_limit();
  plan->parent_death_signal = request.parent_death_signal.value_or(0);
  plan->parent_pid = (request.new_namespaces & CLONE_NEWPID) != 0 ? 0 : ::getpid();
  plan->new_session = request.setsid || request.controlling_terminal;
  plan->new_process_group = request.new_process_group;
  plan->join_pidfd = request.join_pidfd;
  plan->join_namespaces = request.join_namespaces & ~CLONE_NEWPID;
  plan->private_mounts = (request.new_namespaces & CLONE_NEWNS) != 0;
  plan->mount_proc = request.mount_proc;
  plan->mount_dev = request.mount_dev;
}

}  // namespace

Status PosixSpawner::spawn(const SpawnRequest& request, SpawnedProcess* process) {
  *process = SpawnedProcess{};
  std::string path;
  if (request.path.empty()) return invalid_argument("spawn: empty executable path");
  ChildSettings settings;
  if (Status s = settings.prepare(request); !s.ok()) return s;
  spawn::ChildContainer container;
  if (Status s = container.prepare(request); !s.ok()) return s;
  if (settings.search() || request.run_in_child) {
    path = request.path;  // the child searches, or runs no executable
  } else if (!go_look_path(request.path, &path).ok()) {
    return unknown(
        fmt::format("exec {}: {} (searched $PATH)", request.path, std::strerror(ENOENT)));
  }
  bool forked = needs_fork(request);
  ForkPipes pipes;
  std::vector<int> extra;
  if (forked) {
    if (Status s = make_pipe(&pipes.report_read, &pipes.report_write); !s.ok()) return s;
    extra.push_back(pipes.report_write.get());
    if (request.hold) {
      if (Status s = make_pipe(&pipes.gate_read, &pipes.gate_write); !s.ok()) return s;
      extra.push_back(pipes.gate_read.get());
    }
  }
  FdPlan fds;
  std::vector<int> extra_targets;
  if (Status status = plan_fds(request, extra, &fds, &extra_targets); !status.ok()) return status;

  std::vector<std::string> default_argv;
  if (request.argv.empty()) default_argv.push_back(request.path);
  std::vector<char*> argv = c_strings(request.argv.empty() ? default_argv : request.argv);
  std::vector<char*> envp;
  if (request.env) envp = c_strings(*request.env);

  ChildPlan plan;
  plan.path = path.c_str();
  plan.argv = argv.data();
  plan.envp = request.env ? envp.data() : environ;
  fill_plan(request, fds, &plan);
  if (forked) {
    plan.report_fd = pipes.report_write.get();
    plan.report_fd_mapped = extra_targets[0];
    plan.gate_fd = request.hold ? extra_targets[1] : -1;
  }
  settings.fill(&plan);
  container.fill(&plan);
  return forked ? spawn_forked(request, plan, fds, settings, container.pid_namespace_fd(), pipes,
                               process)
                : spawn_vforked(request, plan, fds, settings, process);
}

// ---- ProcessGate ----------------------------------------------------------------------

ProcessGate::ProcessGate(int go_fd, int result_fd, std::string path)
    : go_fd_(go_fd), result_fd_(result_fd), path_(std::move(path)) {}

ProcessGate::~ProcessGate() { close(); }

ProcessGate::ProcessGate(ProcessGate&& other) noexcept
    : go_fd_(std::exchange(other.go_fd_, -1)),
      result_fd_(std::exchange(other.result_fd_, -1)),
      path_(std::move(other.path_)) {}

ProcessGate& ProcessGate::operator=(ProcessGate&& other) noexcept {
  if (this != &other) {
    close();
    go_fd_ = std::exchange(other.go_fd_, -1);
    result_fd_ = std::exchange(other.result_fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

void ProcessGate::close() {
  if (go_fd_ >= 0) ::close(go_fd_);
  if (result_fd_ >= 0) ::close(result_fd_);
  go_fd_ = result_fd_ = -1;
}

Status ProcessGate::release() {
  if (go_fd_ < 0) return failed_precondition("process gate already released");
  char byte = 1;
  ssize_t n;
  do {
    n = ::write(go_fd_, &byte, 1);
  } while (n < 0 && errno == EINTR);
  Status status;
  if (n != 1) {
    status = unknown(fmt::format("start {}: {}", path_, std::strerror(errno)));
  } else {
    ChildReport report = read_report(result_fd_);  // EOF: exec'd (the pipe is CLOEXEC)
    if (report.step == ChildStep::kExec) {
      status = unknown(fmt::format("exec {}: {}", path_, std::strerror(report.error)));
    } else if (report.step != ChildStep::kNone) {
      status = unknown(fmt::format("spawn {}: {}: {}", path_, spawn::step_name(report.step),
                                   std::strerror(report.error)));
    }
  }
  close();
  return status;
}

}  // namespace shim
