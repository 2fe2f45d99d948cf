#include "state_dir.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

namespace shim_vm {

std::string pod_state_dir(const std::string& ns, const std::string& pod) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a: stable across builds
  for (char c : ns + "/" + pod) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return fmt::format("/run/libshim-vm/{:016x}", hash);
}

namespace {

// Empty directories only, depth first: rmdir never deletes data.
void remove_empty_dirs(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) remove_empty_dirs(entry.path());
  }
  ::rmdir(dir.c_str());
}

}  // namespace

void remove_state_dir(const std::string& dir) {
  std::string shared = dir + "/shared";
  // Each level of a bind mount stacked by a retry goes too.
  for (int i = 0; i < 8 && ::umount2(shared.c_str(), MNT_DETACH) == 0; ++i) {
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename() == "shared") continue;
    if (!entry.is_directory(ec)) ::unlink(entry.path().c_str());
  }
  remove_empty_dirs(shared);
  ::rmdir(dir.c_str());
}

}  // namespace shim_vm
