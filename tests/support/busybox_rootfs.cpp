#include "support/busybox_rootfs.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace shim::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kApplets[] = {
    "sh",   "ash",   "echo", "cat",   "sleep", "true",  "false", "ls",   "ps",    "kill",
    "env",  "id",    "pwd",  "mkdir", "rm",    "touch", "wc",    "head", "tail",  "grep",
    "test", "[",     "printf", "stat", "readlink", "hostname", "mount", "uname", "yes",
    "seq",  "date",  "sync", "trap",  "timeout", "nproc", "ln",   "cp",   "mv",    "tee"};

// A dynamically linked busybox would need the host's loader inside the rootfs: accept
// only a 64-bit ELF without a PT_INTERP program header.
bool is_static_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[64] = {};
  if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return false;
  if (std::memcmp(header, "\x7f" "ELF", 4) != 0 || header[4] != 2 /* ELFCLASS64 */) return false;
  auto le = [](const unsigned char* p, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  };
  const std::uint64_t phoff = le(header + 32, 8);
  const std::uint64_t phentsize = le(header + 54, 2);
  const std::uint64_t phnum = le(header + 56, 2);
  for (std::uint64_t i = 0; i < phnum; ++i) {
    unsigned char type[4];
    in.seekg(static_cast<std::streamoff>(phoff + i * phentsize));
    if (!in.read(reinterpret_cast<char*>(type), sizeof type)) return false;
    if (le(type, 4) == 3 /* PT_INTERP */) return false;
  }
  return true;
}

}  // namespace

bool busybox_available() { return is_static_elf(kBusyboxBinary); }

void make_busybox_rootfs(const std::string& dir) {
  if (!busybox_available()) {
    throw std::runtime_error(
        fmt::format("{} missing or not static (install busybox-static)", kBusyboxBinary));
  }
  const fs::path root(dir);
  for (const char* sub : {"bin", "proc", "sys", "dev", "tmp", "run", "etc", "root"}) {
    fs::create_directories(root / sub);
  }
  fs::permissions(root / "tmp", fs::perms::all | fs::perms::sticky_bit);
  fs::copy_file(kBusyboxBinary, root / "bin" / "busybox", fs::copy_options::overwrite_existing);
  for (const char* applet : kApplets) {
    const fs::path link = root / "bin" / applet;
    std::error_code ignored;
    fs::remove(link, ignored);
    fs::create_symlink("busybox", link);
  }
  std::ofstream(root / "etc" / "passwd") << "root:x:0:0:root:/root:/bin/sh\n";
  std::ofstream(root / "etc" / "group") << "root:x:0:\n";
}

}  // namespace shim::test
