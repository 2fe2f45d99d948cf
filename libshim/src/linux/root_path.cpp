#include "linux/root_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <vector>

#include <fmt/format.h>

#include "gocompat/go_compat.h"

namespace shim {

namespace {

constexpr int kMaxLinks = 255;

void push_components(std::string_view path, std::deque<std::string>* pending) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    std::size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  pending->insert(pending->begin(), parts.begin(), parts.end());
}

std::string join_components(const std::vector<std::string>& parts) {
  std::string path = "/";
  for (const std::string& part : parts) {
    if (path.size() > 1) path += '/';
    path += part;
  }
  return path;
}

bool read_link(const std::string& path, std::string* target) {
  std::string buffer(4096, '\0');
  ssize_t n = ::readlink(path.c_str(), buffer.data(), buffer.size());
  if (n < 0) return false;
  buffer.resize(static_cast<std::size_t>(n));
  *target = std::move(buffer);
  return true;
}

}  // namespace

shim::Status root_path(const std::string& root, std::string_view path, std::string* joined) {
  if (path.empty()) {
    *joined = root;
    return {};
  }
  std::deque<std::string> pending;
  push_components(path, &pending);
  std::vector<std::string> resolved;
  int links = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.front());
    pending.pop_front();
    if (part == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    resolved.push_back(part);
    std::string real = go_join_path(root, join_components(resolved));
    struct stat st {};
    if (::lstat(real.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // not there (yet): taken literally
      return shim::unknown(fmt::format("lstat {}: {}", real, go_errno_text(errno)));
    }
    if (!S_ISLNK(st.st_mode)) continue;
    if (++links > kMaxLinks) return shim::unknown("too many links");
    std::string target;
    if (!read_link(real, &target))
      return shim::unknown(fmt::format("readlink {}: {}", real, go_errno_text(errno)));
    resolved.pop_back();
    if (!target.empty() && target.front() == '/') resolved.clear();
    push_components(target, &pending);
  }
  *joined = go_join_path(root, join_components(resolved));
  return {};
}

}  // namespace shim
