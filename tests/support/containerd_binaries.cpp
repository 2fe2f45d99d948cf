#include "support/containerd_binaries.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "support/subprocess.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kDefaultContainerd = "/usr/bin/containerd";
constexpr const char* kDefaultCtr = "/usr/bin/ctr";
constexpr const char* kExpectVariable = "LIBSHIM_CONTAINERD_EXPECT";

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// "containerd 1.7" when a multi-version run asks for 1.7, else "containerd".
std::string wanted_name() {
  const std::string expect = env_or(kExpectVariable, "");
  return expect.empty() ? "containerd" : fmt::format("containerd {}", expect);
}

}  // namespace

ContainerdVersion parse_containerd_version(std::string_view output) {
  ContainerdVersion version;
  std::istringstream in{std::string(output)};
  std::string program, module, text;
  in >> program >> module >> text;
  version.text = text;
  std::string_view rest = text;
  if (!rest.empty() && rest.front() == 'v') rest.remove_prefix(1);
  int* parts[3] = {&version.major, &version.minor, &version.patch};
  for (int* part : parts) {
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 0) break;
    *part = std::stoi(std::string(rest.substr(0, digits)));
    rest.remove_prefix(digits);
    if (rest.empty() || rest.front() != '.') break;
    rest.remove_prefix(1);
  }
  return version;
}

ContainerdBinaries resolve_containerd(const std::string& containerd_bin,
                                      const std::string& ctr_bin) {
  ContainerdBinaries bins;
  bins.containerd = containerd_bin.empty() ? env_or("LIBSHIM_CONTAINERD_BIN", kDefaultContainerd)
                                           : containerd_bin;
  if (!ctr_bin.empty()) {
    bins.ctr = ctr_bin;
    return bins;
  }
  const std::string sibling =
      (std::filesystem::path(bins.containerd).parent_path() / "ctr").string();
  bins.ctr = env_or("LIBSHIM_CTR_BIN",
                    ::access(sibling.c_str(), X_OK) == 0 ? sibling : std::string(kDefaultCtr));
  return bins;
}

std::optional<ContainerdVersion> probe_containerd(const ContainerdBinaries& bins,
                                                  std::string* why) {
  const char* hint = std::getenv(kExpectVariable) != nullptr
                         ? "cmake/fetch-containerd.sh fetches it"
                         : "cmake/install-deps.sh installs it";
  for (const std::string& bin : {bins.containerd, bins.ctr}) {
    if (::access(bin.c_str(), X_OK) != 0) {
      *why = fmt::format("{} not available: {} is missing ({})", wanted_name(), bin, hint);
      return std::nullopt;
    }
  }
  CommandResult run = run_command({bins.containerd, "--version"}, {.timeout = 10s});
  if (!run.ok()) {
    *why = fmt::format("{} not available: {} --version: {}", wanted_name(), bins.containerd,
                       run.describe());
    return std::nullopt;
  }
  return parse_containerd_version(run.out);
}

void check_expected_containerd(const ContainerdVersion& version, const std::string& bin) {
  const std::string expect = env_or(kExpectVariable, "");
  if (expect.empty()) return;
  const std::string actual = fmt::format("{}.{}", version.major, version.minor);
  if (actual != expect) {
    throw std::runtime_error(
        fmt::format("{} is containerd {}, but {}={}", bin, version.text, kExpectVariable, expect));
  }
}

}  // namespace shim::test

namespace shim::test {

std::string cached_containerd_bin(std::string_view major_minor) {
  const char* cache = std::getenv("LIBSHIM_CACHE");
  std::string dir = cache != nullptr && *cache != '\0' ? cache : LIBSHIM_TEST_CACHE_DIR;
  std::string bin = fmt::format("{}/containerd-{}/usr/bin/containerd", dir, major_minor);
  return ::access(bin.c_str(), X_OK) == 0 ? bin : "";
}

}  // namespace shim::test
