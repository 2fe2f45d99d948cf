#include "protocol/running_shims.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "protocol/flags.h"
#include "shim/unique_fd.h"

namespace shim::detail {
namespace {

std::vector<std::string> split_nul(std::string_view text) {
  std::vector<std::string> words;
  while (!text.empty()) {
    std::size_t end = text.find('\0');
    words.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return words;
}

std::string read_small_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > (1U << 20)) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

std::string read_link(const std::string& path) {
  char buffer[4096];
  ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

bool daemon_of_cmdline(std::string_view cmdline, const ShimQuery& query, RunningShim* shim) {
  std::vector<std::string> words = split_nul(cmdline);
  if (words.empty()) return false;  // a zombie, or a kernel thread
  if (std::filesystem::path(words[0]).filename() != query.program_name) return false;
  ShimFlags flags;
  std::span<const std::string> args(words.data() + 1, words.size() - 1);
  if (!parse_flags(args, &flags).ok()) return false;
  if (!flags.action.empty() || flags.info || flags.version || flags.help) return false;
  if (flags.id.empty() || flags.ns.empty() || flags.address != query.grpc_address) return false;
  if (!query.ns.empty() && flags.ns != query.ns) return false;
  shim->ns = flags.ns;
  shim->id = flags.id;
  return true;
}

std::vector<RunningShim> find_running_shims(const ShimQuery& query) {
  std::vector<RunningShim> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(proc)) {
    std::string_view name(entry->d_name);
    pid_t pid = 0;
    auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error != std::errc() || end != name.data() + name.size() || pid <= 0 || pid == self) {
      continue;
    }
    const std::string dir = "/proc/" + std::string(name);
    RunningShim shim;
    if (!daemon_of_cmdline(read_small_file(dir + "/cmdline"), query, &shim)) continue;
    shim.pid = pid;
    shim.exe = read_link(dir + "/exe");
    if (shim.exe.empty()) continue;  // it ended meanwhile
    found.push_back(std::move(shim));
  }
  ::closedir(proc);
  std::sort(found.begin(), found.end(),
            [](const RunningShim& a, const RunningShim& b) { return a.pid < b.pid; });
  return found;
}

}  // namespace shim::detail
