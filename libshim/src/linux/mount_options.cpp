#include "linux/mount_options.h"

#include <sys/mount.h>

#include <algorithm>
#include <string_view>

namespace shim {

namespace {

struct FlagOption {
  std::string_view name;
  bool clear;
  unsigned long flag;
};

constexpr FlagOption kFlagOptions[] = {
    {"async", true, MS_SYNCHRONOUS},
    {"atime", true, MS_NOATIME},
    {"bind", false, MS_BIND},
    {"dev", true, MS_NODEV},
    {"diratime", true, MS_NODIRATIME},
    {"dirsync", false, MS_DIRSYNC},
    {"exec", true, MS_NOEXEC},
    {"mand", false, MS_MANDLOCK},
    {"noatime", false, MS_NOATIME},
    {"nodev", false, MS_NODEV},
    {"nodiratime", false, MS_NODIRATIME},
    {"noexec", false, MS_NOEXEC},
    {"nomand", true, MS_MANDLOCK},
    {"norelatime", true, MS_RELATIME},
    {"nostrictatime", true, MS_STRICTATIME},
    {"nosuid", false, MS_NOSUID},
    {"rbind", false, MS_BIND | MS_REC},
    {"relatime", false, MS_RELATIME},
    {"remount", false, MS_REMOUNT},
    {"ro", false, MS_RDONLY},
    {"rw", true, MS_RDONLY},
    {"strictatime", false, MS_STRICTATIME},
    {"suid", true, MS_NOSUID},
    {"sync", false, MS_SYNCHRONOUS},
    {"shared", false, MS_SHARED},
    {"rshared", false, MS_SHARED | MS_REC},
    {"private", false, MS_PRIVATE},
    {"rprivate", false, MS_PRIVATE | MS_REC},
    {"slave", false, MS_SLAVE},
    {"rslave", false, MS_SLAVE | MS_REC},
    {"unbindable", false, MS_UNBINDABLE},
    {"runbindable", false, MS_UNBINDABLE | MS_REC},
};

const FlagOption* find_flag(std::string_view option) {
  for (const FlagOption& flag : kFlagOptions) {
    if (flag.name == option) return &flag;
  }
  return nullptr;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  for (;;) {
    std::size_t at = text.find(separator);
    parts.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

// Go's path.Dir.
std::string dir_of(std::string_view path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  std::string dir(path.substr(0, slash));
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir.empty() ? "/" : dir;
}

std::string longest_common_prefix(const std::vector<std::string>& strings) {
  if (strings.empty()) return "";
  auto [min, max] = std::minmax_element(strings.begin(), strings.end());
  std::size_t i = 0;
  while (i < min->size() && i < max->size() && (*min)[i] == (*max)[i]) ++i;
  return min->substr(0, i);
}

}  // namespace

std::string ParsedMountOptions::data_string() const {
  std::string joined;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (i > 0) joined += ',';
    joined += data[i];
  }
  return joined;
}

ParsedMountOptions parse_mount_options(const std::vector<std::string>& options) {
  ParsedMountOptions parsed;
  for (const std::string& option : options) {
    if (const FlagOption* flag = find_flag(option)) {
      if (flag->clear) {
        parsed.flags &= ~flag->flag;
      } else {
        parsed.flags |= flag->flag;
      }
    } else if (option == "defaults") {
      continue;
    } else if (option == "loop") {
      parsed.loop = true;
    } else if (option.starts_with("uidmap=")) {
      parsed.uidmap = option.substr(7);
    } else if (option.starts_with("gidmap=")) {
      parsed.gidmap = option.substr(7);
    } else {
      parsed.data.push_back(option);
    }
  }
  return parsed;
}

std::size_t mount_options_size(const std::vector<std::string>& options) {
  std::size_t size = 0;
  for (const std::string& option : options) size += option.size();
  return size;
}

CompactedOverlay compact_lowerdir_option(const std::vector<std::string>& options) {
  CompactedOverlay unchanged{"", options};
  auto lowerdir = std::find_if(options.begin(), options.end(), [](const std::string& option) {
    return option.starts_with("lowerdir=");
  });
  if (lowerdir == options.end()) return unchanged;
  std::vector<std::string> dirs = split(std::string_view(*lowerdir).substr(9), ':');
  if (dirs.size() == 1) return unchanged;

  std::string common = longest_common_prefix(dirs);
  if (common.empty()) return unchanged;
  // Snapshot dirs are <root>/snapshots/<number>: the common prefix of 12 and 13 is
  // ".../snapshots/1", so step back to the parent directory.
  common = dir_of(common);
  if (common == "/") return unchanged;
  common += '/';

  std::string relative;
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    if (!dirs[i].starts_with(common)) return unchanged;  // e.g. "//" in a path
    if (i > 0) relative += ':';
    relative += dirs[i].substr(common.size());
  }
  CompactedOverlay compacted{common, {}};
  for (auto it = options.begin(); it != options.end(); ++it) {
    if (it != lowerdir) compacted.options.push_back(*it);
  }
  compacted.options.push_back("lowerdir=" + relative);
  return compacted;
}

}  // namespace shim
