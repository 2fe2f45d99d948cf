#include "support/criu.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace shim::test {

std::string criu_path_dir() {
  const char* cache = std::getenv("LIBSHIM_CACHE");
  return std::string(cache != nullptr && *cache != '\0' ? cache : LIBSHIM_TEST_CACHE_DIR) +
         "/criu/bin";
}

namespace {

constexpr std::string_view kDumpHangs = "hangs (5 s)";

// The last line of `file`, or "" (CRIU's log ends with where it stopped).
std::string last_line(const std::string& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// `criu check` passing is not enough: on some kernels (6.18.44 under kvm_pvm here) every
// dump hangs once the parasite is in the victim ("new_sp=... ip ..." and no more). So a
// plain process is dumped once, bounded (5 s; a dump of `sleep` takes ~0.1 s) (--leave-running; the
// victim is killed after).
std::optional<std::string> dump_fails(const std::string& criu) {
  using namespace std::chrono_literals;
  TempDir dir("criu-probe-");
  CommandResult victim =
      run_command({"/bin/sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!"});
  pid_t pid = static_cast<pid_t>(std::atol(victim.out.c_str()));
  if (!victim.ok() || pid <= 0) return "cannot start a process to probe `criu dump` with";
  CommandResult dump = run_command({criu, "dump", "-t", std::to_string(pid), "-D", dir.path(), "-o",
                                    "dump.log", "-v4", "--leave-running"},
                                   CommandOptions{.timeout = 5s});
  ::kill(pid, SIGKILL);
  if (dump.ok()) return std::nullopt;
  struct utsname uts {};
  ::uname(&uts);
  return fmt::format("`{} dump` of a plain process {} on this kernel ({}); its log ends: {}", criu,
                     dump.timed_out ? kDumpHangs : "fails", uts.release,
                     last_line(dir.path() + "/dump.log"));
}

std::optional<std::string> check_criu() {
  using namespace std::chrono_literals;
  const std::string criu = criu_path_dir() + "/criu";
  if (::access(criu.c_str(), X_OK) != 0) {
    return fmt::format("no CRIU at {} (cmake/fetch-criu.sh fetches it)", criu);
  }
  CommandResult check = run_command({criu, "check"}, CommandOptions{.timeout = 60s});
  if (check.ok()) return dump_fails(criu);
  // CRIU logs "Error (file:line): ..." lines; the first names the cause (e.g. Debian 12's
  // 3.17: "vdso: Unexpected rt vDSO area bounds"), later ones only the callers.
  std::istringstream lines(check.out + check.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Error")) return fmt::format("`{} check` fails: {}", criu, line);
  }
  return fmt::format("`{} check` fails: {}", criu, check.describe());
}

// check_criu() costs up to 15 s where dumps hang, and every test case is a process of
// its own: its verdict is kept in <cache>/criu/probe for this boot and this criu binary.
std::optional<std::string> cached_check_criu() {
  const std::string criu = criu_path_dir() + "/criu";
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  std::error_code ec;
  auto stamp = std::filesystem::last_write_time(criu, ec).time_since_epoch().count();
  if (ec || boot_id.empty()) return check_criu();
  const std::string key = fmt::format("{} {}", boot_id, stamp);
  const std::string file = criu_path_dir() + "/../probe";
  std::ifstream in(file);
  std::string line, verdict;
  if (std::getline(in, line) && line == key && std::getline(in, verdict)) {
    if (verdict == "ok") return std::nullopt;
    return verdict;
  }
  std::optional<std::string> reason = check_criu();
  const std::string tmp = fmt::format("{}.{}", file, ::getpid());
  std::ofstream(tmp) << key << "\n" << (reason ? *reason : std::string("ok")) << "\n";
  std::filesystem::rename(tmp, file, ec);
  return reason;
}

}  // namespace

std::optional<std::string> criu_unavailable() {
  static const std::optional<std::string> reason = cached_check_criu();
  return reason;
}

bool criu_dump_hangs() {
  std::optional<std::string> reason = criu_unavailable();
  return reason && reason->find(std::string(kDumpHangs)) != std::string::npos;
}

}  // namespace shim::test
