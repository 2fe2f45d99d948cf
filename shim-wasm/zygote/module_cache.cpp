#include "module_cache.h"

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "fork_ready.h"
#include "module_file.h"
#include "rootfs_file.h"
#include "trial_run.h"

namespace shim_wasm {
namespace {

// A path or message for a relayed log line (shim-wasm/src/stderr_relay.h): its tabs,
// newlines and other control characters escaped, so it stays one field of one line.
std::string field_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

// This process's resident bytes (/proc/self/statm), 0 if unknown.
std::size_t resident_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "re");
  if (statm == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  int got = std::fscanf(statm, "%lu %lu", &size, &resident);
  std::fclose(statm);
  return got == 2 ? resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

std::size_t content_hash(const std::string& bytes) { return std::hash<std::string>{}(bytes); }

}  // namespace

ModuleCache::~ModuleCache() {
  for (Entry& entry : entries_) api_.vm_delete(entry.vm);
  if (spare_ != nullptr) api_.vm_delete(spare_);
}

void ModuleCache::say(std::string line) const {
  if (log_fd_ < 0) return;
  line.push_back('\n');
  // A failed write (the shim gone) only loses the line; SIGPIPE is ignored.
  [[maybe_unused]] ssize_t n = ::write(log_fd_, line.data(), line.size());
}

void ModuleCache::release(void* vm) {
  api_.vm_delete(vm);
  // A module's load can take tens of MiB for a moment, which glibc would keep.
  ::malloc_trim(0);
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
  if (rootfs.empty()) return nullptr;
  shim::UniqueFd fd = open_in_rootfs(rootfs, module);
  std::string bytes;
  if (fd.get() < 0 || !read_module_file(fd.get(), kMaxZygoteModuleBytes, &bytes)) return nullptr;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->bytes == bytes) {
      entries_.splice(entries_.begin(), entries_, it);
      return &entries_.front();
    }
  }
  // A false match of size and hash only leaves a module to its child: the safe side.
  if (refused_before(bytes)) return nullptr;
  const auto began = std::chrono::steady_clock::now();
  const std::size_t resident_before = resident_bytes();
  std::string why;
  bool for_good = true;
  void* vm = instantiate(bytes, &why, &for_good);
  const std::size_t resident_after = resident_bytes();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  // To the shim's log (stderr_relay.h): once per module and shim (each time for what
  // may pass another time: a busy machine, no fork).
  if (vm == nullptr) {
    if (for_good) remember_refused(bytes);
    say(fmt::format("wasm zygote: module left to its process\tmodule={}\tbytes={}\treason={}",
                    field_text(module), bytes.size(), field_text(why)));
    return nullptr;
  }
  const std::size_t cost =
      bytes.size() + (resident_after > resident_before ? resident_after - resident_before : 0);
  if (cost > kMaxBytes) {  // alone past the budget: kept, it would push out every other
    release(vm);
    remember_refused(bytes);
    say(fmt::format(
        "wasm zygote: module left to its process\tmodule={}\tbytes={}\treason=its instance "
        "costs {} KiB",
        field_text(module), bytes.size(), cost / 1024));
    return nullptr;
  }
  say(fmt::format("wasm zygote: module made ready\tmodule={}\tbytes={}\tkept_kib={}\tms={:.1f}",
                  field_text(module), bytes.size(), cost / 1024, ms));
  entries_.push_front(Entry{std::move(bytes), vm, cost});
  cost_ += cost;
  while (entries_.size() > kMaxModules || (cost_ > kMaxBytes && entries_.size() > 1)) {
    cost_ -= entries_.back().cost;
    release(entries_.back().vm);
    entries_.pop_back();
  }
  return &entries_.front();
}

const char* ModuleCache::load_steps(void* vm, const std::string& bytes,
                                    WasmEdgeResult* result) const {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  *result = api_.vm_load_bytes(vm, data, static_cast<std::uint32_t>(bytes.size()));
  if (!api_.result_ok(*result)) return "load";
  *result = api_.vm_validate(vm);
  if (!api_.result_ok(*result)) return "validate";
  *result = api_.vm_instantiate(vm);
  if (!api_.result_ok(*result)) return "instantiate";
  return nullptr;
}

void* ModuleCache::instantiate(const std::string& bytes, std::string* why, bool* for_good) {
  if (!can_instantiate_before_fork(bytes, why)) return nullptr;
  // What the load costs the engine is measured in a copy of this process first: past
  // the bounds, it is killed there and the module left to its own process.
  const TrialOutcome trial = run_trial(
      [this, &bytes] {
        void* vm = spare_ != nullptr ? spare_ : api_.vm_create(config_, nullptr);
        WasmEdgeResult result{};
        return vm != nullptr && load_steps(vm, bytes, &result) == nullptr;
      },
      kTrialBounds);
  switch (trial.result) {
    case TrialOutcome::Result::kTooLarge:
      *why = fmt::format("its trial load grew past {} MiB", kTrialBounds.max_growth_bytes >> 20);
      return nullptr;
    case TrialOutcome::Result::kTooSlow:
      *why =
          fmt::format("its trial load used more than {} ms of CPU", kTrialBounds.max_cpu.count());
      return nullptr;
    case TrialOutcome::Result::kCrashed:
      *why = "its trial load crashed";
      return nullptr;
    case TrialOutcome::Result::kTimedOut:
      *for_good = false;
      *why = fmt::format("its trial load ran past {} ms", kTrialBounds.max_wall.count());
      return nullptr;
    case TrialOutcome::Result::kNoChild:
      *for_good = false;
      *why = fmt::format("no trial load (fork: {})", std::strerror(trial.error));
      return nullptr;
    case TrialOutcome::Result::kDone:
    case TrialOutcome::Result::kFailed:  // the engine's reason comes from the load below
      break;
  }
  void* vm = spare_ != nullptr ? std::exchange(spare_, nullptr) : api_.vm_create(config_, nullptr);
  if (vm == nullptr) {
    *why = "no VM could be made";
    return nullptr;
  }
  WasmEdgeResult result{};
  const char* step = load_steps(vm, bytes, &result);
  if (step == nullptr) return vm;
  const char* message =
      api_.result_get_message != nullptr ? api_.result_get_message(result) : nullptr;
  *why = std::string(step) + ": " + (message != nullptr ? message : "failed");
  release(vm);
  return nullptr;
}

}  // namespace shim_wasm
