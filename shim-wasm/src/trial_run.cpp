#include "trial_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "shim/unique_fd.h"

namespace shim_wasm {
namespace {

using Result = TrialOutcome::Result;

// The child's exit statuses: done, failed, and past its bound by its own peak.
constexpr int kExitDone = 0;
constexpr int kExitFailed = 1;
constexpr int kExitTooLarge = 3;

// Resident bytes of `pid` (0: this process) not backed by a file (statm's resident -
// shared): what it allocated or wrote. 0 when unknown.
std::size_t anonymous_resident(pid_t pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/statm") : "/proc/" + std::to_string(pid) + "/statm";
  std::FILE* statm = std::fopen(path.c_str(), "re");
  if (statm == nullptr) return 0;
  unsigned long size = 0, resident = 0, shared = 0;
  int got = std::fscanf(statm, "%lu %lu %lu", &size, &resident, &shared);
  std::fclose(statm);
  if (got != 3 || resident < shared) return 0;
  return (resident - shared) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// The CPU time `pid` has used (utime + stime of /proc/<pid>/stat); zero when unknown.
std::chrono::milliseconds cpu_time(pid_t pid) {
  std::FILE* stat = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
  if (stat == nullptr) return {};
  char line[1024];
  const bool got = std::fgets(line, sizeof line, stat) != nullptr;
  std::fclose(stat);
  const char* after_name = got ? std::strrchr(line, ')') : nullptr;  // comm may hold spaces
  if (after_name == nullptr) return {};
  unsigned long long utime = 0, stime = 0;
  // Fields 3-15 after the name: state ppid pgrp session tty tpgid flags minflt cminflt
  // majflt cmajflt utime stime.
  if (std::sscanf(after_name + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                  &stime) != 2) {
    return {};
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return std::chrono::milliseconds((utime + stime) * 1000 / (ticks > 0 ? ticks : 100));
}

// A line "<key>: <n> kB" of /proc/self/status, in bytes; 0 if absent.
std::size_t status_bytes(const char* key) {
  std::FILE* status = std::fopen("/proc/self/status", "re");
  if (status == nullptr) return 0;
  char line[256];
  std::size_t value = 0;
  const std::size_t key_size = std::char_traits<char>::length(key);
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::char_traits<char>::compare(line, key, key_size) == 0 && line[key_size] == ':') {
      value = std::strtoull(line + key_size + 1, nullptr, 10) * 1024;
      break;
    }
  }
  std::fclose(status);
  return value;
}

[[noreturn]] void run_child(const std::function<bool()>& attempt, pid_t parent,
                            std::size_t max_growth) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(kExitFailed);  // the caller died before prctl
  // A crash is an answer, not a core to write: a dump of a copy of the zygote (the
  // shim's limits: containerd's unit allows any core) would take long and hold other
  // containers' modules.
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::prctl(PR_SET_DUMPABLE, 0);
  // Its peak between the parent's samples: VmHWM (reset to the RSS now, clear_refs 5)
  // at the end, less the file pages it holds then (a fork leaves the caller's file
  // pages unmapped; the engine's code paged in again is not growth).
  if (std::FILE* clear = std::fopen("/proc/self/clear_refs", "we"); clear != nullptr) {
    std::fputs("5", clear);
    std::fclose(clear);
  }
  const std::size_t anonymous_before = status_bytes("RssAnon");
  bool done = false;
  try {
    done = attempt();
  } catch (...) {
    done = false;
  }
  const std::size_t peak = status_bytes("VmHWM");
  const std::size_t files = status_bytes("RssFile") + status_bytes("RssShmem");
  if (anonymous_before != 0 && peak > files + anonymous_before + max_growth) ::_exit(kExitTooLarge);
  ::_exit(done ? kExitDone : kExitFailed);  // no atexit handlers or stdio flushes of ours
}

Result result_of(int status) {
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kExitDone:
        return Result::kDone;
      case kExitTooLarge:
        return Result::kTooLarge;
      case kExitFailed:
        return Result::kFailed;
    }
  }
  return Result::kCrashed;  // a signal of its own (SIGSEGV, an abort, the OOM killer)
}

// Waits up to `timeout` for `pid` to end (its pidfd readable), or sleeps that long.
void wait_a_while(const shim::UniqueFd& pidfd, std::chrono::milliseconds timeout) {
  if (pidfd.get() < 0) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  pollfd ended{pidfd.get(), POLLIN, 0};
  ::poll(&ended, 1, static_cast<int>(timeout.count()));  // EINTR: the loop looks again
}

}  // namespace

TrialOutcome run_trial(const std::function<bool()>& attempt, const TrialBounds& bounds) {
  TrialOutcome outcome;
  const std::size_t baseline = anonymous_resident(0);
  const pid_t parent = ::getpid();
  const auto began = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) run_child(attempt, parent, bounds.max_growth_bytes);
  if (pid < 0) {
    outcome.result = Result::kNoChild;
    outcome.error = errno;
    return outcome;
  }
  // Without a pidfd (a kernel before 5.3) the waits are plain sleeps.
  const shim::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  std::optional<Result> killed;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    const auto elapsed = std::chrono::steady_clock::now() - began;
    outcome.ms = std::chrono::duration<double, std::milli>(elapsed).count();
    if (done < 0 && errno == EINTR) continue;
    if (done == pid || done < 0) {
      outcome.result = killed ? *killed : done == pid ? result_of(status) : Result::kCrashed;
      if (done < 0) outcome.error = errno;
      return outcome;
    }
    if (!killed) {
      const std::size_t resident = anonymous_resident(pid);
      const std::size_t growth = resident > baseline ? resident - baseline : 0;
      if (growth > outcome.peak_growth_bytes) outcome.peak_growth_bytes = growth;
      if (growth > bounds.max_growth_bytes) {
        killed = Result::kTooLarge;
      } else if (cpu_time(pid) > bounds.max_cpu) {
        killed = Result::kTooSlow;
      } else if (elapsed > bounds.max_wall) {
        killed = Result::kTimedOut;
      }
      if (killed) ::kill(pid, SIGKILL);  // reaped on a later turn
    }
    wait_a_while(pidfd, killed ? std::chrono::milliseconds(1) : bounds.sample_every);
  }
}

}  // namespace shim_wasm
