#include "module_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

#include "fork_ready.h"
#include "rootfs_file.h"

namespace shim_wasm {
namespace {

// The whole regular file at `fd`, if it is one of at most `limit` bytes.
bool read_whole(int fd, std::size_t limit, std::string* out) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      static_cast<std::size_t>(st.st_size) > limit) {
    return false;
  }
  out->resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out->size()) {
    ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // shrank under us, or an error: let the child load it
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

ModuleCache::~ModuleCache() {
  for (Entry& entry : entries_) api_.vm_delete(entry.vm);
  if (spare_ != nullptr) api_.vm_delete(spare_);
}

void* ModuleCache::spare() {
  if (spare_ == nullptr) spare_ = api_.vm_create(config_, nullptr);
  return spare_;
}

bool file_matches(const std::string& path, const std::string& bytes) {
  shim::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) != bytes.size()) {
    return false;
  }
  if (bytes.empty()) return true;
  void* mapped = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (mapped == MAP_FAILED) return false;
  bool same = std::memcmp(mapped, bytes.data(), bytes.size()) == 0;
  ::munmap(mapped, bytes.size());
  return same;
}

const ModuleCache::Entry* ModuleCache::ready(const std::string& rootfs, const std::string& module) {
  if (rootfs.empty()) return nullptr;
  shim::UniqueFd fd = open_in_rootfs(rootfs, module);
  std::string bytes;
  if (fd.get() < 0 || !read_whole(fd.get(), kMaxBytes, &bytes)) return nullptr;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->bytes == bytes) {
      entries_.splice(entries_.begin(), entries_, it);
      return &entries_.front();
    }
  }
  const auto began = std::chrono::steady_clock::now();
  void* vm = instantiate(bytes);
  if (vm == nullptr) return nullptr;
  // To the shim's log (the zygote's stderr): once per module and shim.
  std::fprintf(
      stderr, "level=info msg=\"wasm zygote: module made ready\" module=\"%s\" bytes=%zu ms=%.1f\n",
      module.c_str(), bytes.size(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count());
  bytes_ += bytes.size();
  entries_.push_front(Entry{std::move(bytes), vm});
  while (entries_.size() > kMaxModules || (bytes_ > kMaxBytes && entries_.size() > 1)) {
    bytes_ -= entries_.back().bytes.size();
    api_.vm_delete(entries_.back().vm);
    entries_.pop_back();
  }
  return entries_.empty() || entries_.front().vm != vm ? nullptr : &entries_.front();
}

void* ModuleCache::instantiate(const std::string& bytes) {
  if (!can_instantiate_before_fork(bytes)) return nullptr;
  void* vm = spare_ != nullptr ? std::exchange(spare_, nullptr) : api_.vm_create(config_, nullptr);
  if (vm == nullptr) return nullptr;
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (api_.result_ok(
          api_.vm_load_wasm_from_buffer(vm, data, static_cast<std::uint32_t>(bytes.size()))) &&
      api_.result_ok(api_.vm_validate(vm)) && api_.result_ok(api_.vm_instantiate(vm))) {
    return vm;
  }
  api_.vm_delete(vm);
  return nullptr;
}

}  // namespace shim_wasm
