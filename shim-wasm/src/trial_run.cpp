#include "trial_run.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

namespace shim_wasm {
namespace {

// Resident bytes of `pid` not backed by a file (statm's resident - shared): what it
// allocated or wrote, not the code it paged in. 0 when unknown.
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

constexpr int kExitTooLarge = 3;

[[noreturn]] void run_child(const std::function<bool()>& attempt, pid_t parent,
                            std::size_t max_growth) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the caller died before prctl
  // The peak between the parent's samples: reset VmHWM to the RSS now (clear_refs 5),
  // read it at the end.
  if (std::FILE* clear = std::fopen("/proc/self/clear_refs", "we"); clear != nullptr) {
    std::fputs("5", clear);
    std::fclose(clear);
  }
  const std::size_t before = status_bytes("VmRSS");
  bool done = false;
  try {
    done = attempt();
  } catch (...) {
    done = false;
  }
  const std::size_t peak = status_bytes("VmHWM");
  if (before != 0 && peak > before + max_growth) ::_exit(kExitTooLarge);
  ::_exit(done ? 0 : 1);  // no atexit handlers or stdio flushes of the caller's
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
    outcome.result = TrialOutcome::Result::kNoChild;
    outcome.error = errno;
    return outcome;
  }
  using Result = TrialOutcome::Result;
  std::optional<Result> killed;
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    const auto elapsed = std::chrono::steady_clock::now() - began;
    outcome.ms = std::chrono::duration<double, std::milli>(elapsed).count();
    if (done == pid || (done < 0 && errno != EINTR)) {
      if (killed) {
        outcome.result = *killed;
      } else {
        bool exited = done == pid && WIFEXITED(status);
        outcome.result = !exited                                ? Result::kFailed
                         : WEXITSTATUS(status) == 0             ? Result::kDone
                         : WEXITSTATUS(status) == kExitTooLarge ? Result::kTooLarge
                                                                : Result::kFailed;
      }
      return outcome;
    }
    if (killed) {  // killed, not yet reaped
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    const std::size_t resident = anonymous_resident(pid);
    const std::size_t growth = resident > baseline ? resident - baseline : 0;
    if (growth > outcome.peak_growth_bytes) outcome.peak_growth_bytes = growth;
    if (growth > bounds.max_growth_bytes) killed = Result::kTooLarge;
    if (!killed && elapsed > bounds.max_time) killed = Result::kTooSlow;
    if (killed) {
      ::kill(pid, SIGKILL);
      continue;
    }
    std::this_thread::sleep_for(bounds.sample_every);
  }
}

}  // namespace shim_wasm
