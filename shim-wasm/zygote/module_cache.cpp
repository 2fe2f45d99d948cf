#include "module_cache.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string_view>
#include <utility>

#include "fork_ready.h"
#include "module_file.h"
#include "rootfs_file.h"

namespace shim_wasm {
namespace {

// A path from the image, quoted for a key=value log line: its quotes, backslashes and
// control characters escaped, so it cannot forge a line of the shim's log.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::size_t content_hash(const std::string& bytes) { return std::hash<std::string>{}(bytes); }

}  // namespace

ModuleCache::~ModuleCache() {
  for (Entry& entry : entries_) api_.vm_delete(entry.vm);
  if (spare_ != nullptr) api_.vm_delete(spare_);
}

void* ModuleCache::spare() {
  if (spare_ == nullptr) spare_ = api_.vm_create(config_, nullptr);
  return spare_;
}

bool ModuleCache::refused_before(const std::string& bytes) const {
  const auto key = std::make_pair(bytes.size(), content_hash(bytes));
  for (const auto& refused : refused_) {
    if (refused == key) return true;
  }
  return false;
}

void ModuleCache::remember_refused(const std::string& bytes) {
  refused_.emplace_front(bytes.size(), content_hash(bytes));
  if (refused_.size() > kMaxRefused) refused_.pop_back();
}

const ModuleCache::Entry* ModuleCache::ready(const std::string& rootfs, const std::string& module) {
  if (rootfs.empty() || !api_.has_steps()) return nullptr;
  shim::UniqueFd fd = open_in_rootfs(rootfs, module);
  std::string bytes;
  if (fd.get() < 0 || !read_module_file(fd.get(), kMaxBytes, &bytes)) return nullptr;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->bytes == bytes) {
      entries_.splice(entries_.begin(), entries_, it);
      return &entries_.front();
    }
  }
  // A false match of size and hash only leaves a module to its child: the safe side.
  if (refused_before(bytes)) return nullptr;
  const auto began = std::chrono::steady_clock::now();
  std::string why;
  void* vm = instantiate(bytes, &why);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  // To the shim's log (the zygote's stderr): once per module and shim.
  if (vm == nullptr) {
    remember_refused(bytes);
    std::fprintf(stderr,
                 "level=info msg=\"wasm zygote: module left to its process\" module=%s "
                 "bytes=%zu reason=%s\n",
                 quoted(module).c_str(), bytes.size(), quoted(why).c_str());
    return nullptr;
  }
  std::fprintf(stderr,
               "level=info msg=\"wasm zygote: module made ready\" module=%s bytes=%zu ms=%.1f\n",
               quoted(module).c_str(), bytes.size(), ms);
  const std::size_t size = bytes.size();
  entries_.push_front(Entry{std::move(bytes), vm});
  bytes_ += size;
  while (entries_.size() > kMaxModules || (bytes_ > kMaxBytes && entries_.size() > 1)) {
    bytes_ -= entries_.back().bytes.size();
    api_.vm_delete(entries_.back().vm);
    entries_.pop_back();
  }
  return &entries_.front();
}

void* ModuleCache::instantiate(const std::string& bytes, std::string* why) {
  if (!can_instantiate_before_fork(bytes, why)) return nullptr;
  void* vm = spare_ != nullptr ? std::exchange(spare_, nullptr) : api_.vm_create(config_, nullptr);
  if (vm == nullptr) {
    *why = "no VM could be made";
    return nullptr;
  }
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const char* step = "load";
  WasmEdgeResult result = api_.vm_load_bytes(vm, data, static_cast<std::uint32_t>(bytes.size()));
  if (api_.result_ok(result)) {
    step = "validate";
    result = api_.vm_validate(vm);
  }
  if (api_.result_ok(result)) {
    step = "instantiate";
    result = api_.vm_instantiate(vm);
  }
  if (api_.result_ok(result)) return vm;
  const char* message =
      api_.result_get_message != nullptr ? api_.result_get_message(result) : nullptr;
  *why = std::string(step) + ": " + (message != nullptr ? message : "failed");
  api_.vm_delete(vm);
  return nullptr;
}

}  // namespace shim_wasm
