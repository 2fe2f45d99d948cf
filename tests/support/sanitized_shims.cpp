#include "support/sanitized_shims.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace shim::test {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

std::optional<std::string> sanitized_shim_build_dir() {
  const char* value = std::getenv(kSanitizedShimsEnv);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string shim_build_dir() { return sanitized_shim_build_dir().value_or(LIBSHIM_BINARY_DIR); }

namespace {

constexpr const char* kShimBinaries[] = {"shim-runc/containerd-shim-runc-v2",
                                         "shim-example/containerd-shim-example-v1"};

}  // namespace

std::optional<std::string> sanitized_shims_unavailable() {
  auto dir = sanitized_shim_build_dir();
  if (!dir) return std::nullopt;
  for (const char* binary : kShimBinaries) {
    std::string path = fmt::format("{}/{}", *dir, binary);
    if (::access(path.c_str(), X_OK) != 0) {
      return fmt::format("sanitized shim {} is not built (cmake --build {} --target {})", path, *dir,
                         fs::path(binary).filename().string());
    }
  }
  return std::nullopt;
}

void require_sanitized_shims() {
  auto dir = sanitized_shim_build_dir();
  if (!dir) return;
  for (const char* binary : kShimBinaries) {
    // A shim built without ASan would pass every test here without checking anything.
    std::string path = fmt::format("{}/{}", *dir, binary);
    if (read_text(path).find("__asan_init") == std::string::npos) {
      throw std::runtime_error(fmt::format("{} is not built with AddressSanitizer (LIBSHIM_SANITIZE=ON)", path));
    }
  }
}

std::vector<std::string> sanitizer_env(const std::string& log_dir) {
  // log_path is a common flag: both runtimes write to <log_dir>/report.<pid>. The first
  // report ends the process (UBSan is built -fno-sanitize-recover anyway).
  const std::string common = fmt::format("log_path={}/report:print_stacktrace=1", log_dir);
  return {fmt::format("ASAN_OPTIONS={}:detect_leaks=1:halt_on_error=1", common),
          fmt::format("UBSAN_OPTIONS={}:halt_on_error=1", common)};
}

std::vector<SanitizerReport> read_sanitizer_reports(const std::string& log_dir, bool remove) {
  std::vector<std::pair<fs::file_time_type, SanitizerReport>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(log_dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    SanitizerReport report{entry.path().string(), read_text(entry.path().string())};
    found.emplace_back(entry.last_write_time(ec), std::move(report));
    if (remove) fs::remove(entry.path(), ec);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SanitizerReport> reports;
  for (auto& [time, report] : found) reports.push_back(std::move(report));
  return reports;
}

std::vector<std::string> sanitizer_lines(const std::string& log) {
  // Not "AddressSanitizer:DEADLYSIGNAL": ASan prints it on stderr even with a log_path,
  // and the report itself then goes to the file.
  static constexpr const char* kMarkers[] = {
      "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "SUMMARY: AddressSanitizer",
      "SUMMARY: UndefinedBehaviorSanitizer", "runtime error: "};
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    for (const char* marker : kMarkers) {
      if (line.find(marker) != std::string::npos) {
        lines.push_back(line);
        break;
      }
    }
  }
  return lines;
}

void wait_for_sanitized_shims(const std::string& grpc_address, std::chrono::milliseconds timeout) {
  auto dir = sanitized_shim_build_dir();
  if (!dir) return;
  std::error_code ec;
  const std::string prefix = fs::weakly_canonical(*dir, ec).string() + "/";
  auto ours = [&](const fs::path& proc) {
    std::string exe = fs::read_symlink(proc / "exe", ec).string();
    if (ec || !exe.starts_with(prefix)) return false;
    std::string stat = read_text((proc / "stat").string());
    std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') return false;
    std::string cmdline = read_text((proc / "cmdline").string());
    const std::string nul(1, '\0');
    return cmdline.find(nul + grpc_address + nul) != std::string::npos ||
           cmdline.find(nul + "-address=" + grpc_address + nul) != std::string::npos;
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = false;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) any = any || ours(entry.path());
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string sanitizer_failure(const std::string& log_dir, const std::string& containerd_log) {
  constexpr std::size_t kMaxText = 16 * 1024;  // enough for a few stacks
  std::string text;
  for (const SanitizerReport& report : read_sanitizer_reports(log_dir, false)) {
    text += fmt::format("--- {}\n{}\n", report.path, report.text.substr(0, kMaxText));
  }
  std::vector<std::string> lines = sanitizer_lines(read_text(containerd_log));
  if (!lines.empty()) text += fmt::format("--- sanitizer lines in {}\n", containerd_log);
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

}  // namespace shim::test
