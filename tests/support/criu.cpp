#include "support/criu.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "support/subprocess.h"

namespace shim::test {

std::string criu_path_dir() {
  const char* cache = std::getenv("LIBSHIM_CACHE");
  return std::string(cache != nullptr && *cache != '\0' ? cache : LIBSHIM_TEST_CACHE_DIR) +
         "/criu/bin";
}

namespace {

std::optional<std::string> check_criu() {
  using namespace std::chrono_literals;
  const std::string criu = criu_path_dir() + "/criu";
  if (::access(criu.c_str(), X_OK) != 0) {
    return fmt::format("no CRIU at {} (cmake/fetch-criu.sh fetches it)", criu);
  }
  CommandResult check = run_command({criu, "check"}, CommandOptions{.timeout = 60s});
  if (check.ok()) return std::nullopt;
  // CRIU logs "Error (file:line): ..." lines; the first names the cause (e.g. Debian 12's
  // 3.17: "vdso: Unexpected rt vDSO area bounds"), later ones only the callers.
  std::istringstream lines(check.out + check.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Error")) return fmt::format("`{} check` fails: {}", criu, line);
  }
  return fmt::format("`{} check` fails: {}", criu, check.describe());
}

}  // namespace

std::optional<std::string> criu_unavailable() {
  static const std::optional<std::string> reason = check_criu();
  return reason;
}

}  // namespace shim::test
