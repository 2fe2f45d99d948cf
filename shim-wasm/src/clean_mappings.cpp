#include "clean_mappings.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace shim_wasm {
namespace {

struct Mapping {
  unsigned long start = 0, end = 0;
  bool candidate = false;  // read-only and backed by a file
  long rss_kib = 0;
  long anonymous_kib = -1;  // -1: the field was missing (then never dropped)
  long swap_kib = -1;
};

// "7f..-7f.. r-xp 00000000 08:01 1234   /usr/lib/...": a mapping's header line.
bool parse_header(const std::string& line, Mapping* out) {
  std::istringstream fields(line);
  std::string range, perms, offset, device, inode, path;
  if (!(fields >> range >> perms >> offset >> device >> inode)) return false;
  std::size_t dash = range.find('-');
  if (dash == std::string::npos || perms.size() != 4) return false;
  char* end = nullptr;
  out->start = std::strtoul(range.c_str(), &end, 16);
  if (end != range.c_str() + dash) return false;
  out->end = std::strtoul(range.c_str() + dash + 1, &end, 16);
  if (*end != '\0') return false;
  std::getline(fields >> std::ws, path);
  // Only what cannot have been written since it was mapped (shared mappings would lose
  // nothing either, but nothing of the engine's is shared: left alone).
  out->candidate = perms[1] == '-' && perms[3] == 'p' && inode != "0" && path.starts_with('/');
  return true;
}

long field_kib(const std::string& line, const char* name) {
  std::size_t length = std::strlen(name);
  if (line.compare(0, length, name) != 0 || line.size() <= length || line[length] != ':') return -1;
  return std::strtol(line.c_str() + length + 1, nullptr, 10);
}

// The process's threads (/proc/self/status); -1 if unknown.
int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("Threads:")) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

}  // namespace

long release_clean_file_mappings(std::string* error) {
  // Another thread could remap an address between the read and the madvise.
  if (int threads = thread_count(); threads != 1) {
    *error = threads < 0 ? "cannot read /proc/self/status"
                         : "more than one thread: mappings could change under the scan";
    return -1;
  }
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) {
    *error = "cannot read /proc/self/smaps";
    return -1;
  }
  std::vector<Mapping> mappings;
  std::string line;
  while (std::getline(smaps, line)) {
    Mapping header;
    if (parse_header(line, &header)) {
      mappings.push_back(header);
      continue;
    }
    if (mappings.empty()) continue;
    if (long kib = field_kib(line, "Rss"); kib >= 0) mappings.back().rss_kib = kib;
    if (long kib = field_kib(line, "Anonymous"); kib >= 0) mappings.back().anonymous_kib = kib;
    if (long kib = field_kib(line, "Swap"); kib >= 0) mappings.back().swap_kib = kib;
  }
  long released = 0;
  for (const Mapping& m : mappings) {
    // A page copied on write (a relocation) is Anonymous while resident and Swap once
    // swapped out: dropping either would lose it.
    if (!m.candidate || m.anonymous_kib != 0 || m.swap_kib != 0 || m.rss_kib == 0) continue;
    if (::madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) == 0)
      released += m.rss_kib;
  }
  return released;
}

}  // namespace shim_wasm
