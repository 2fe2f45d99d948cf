// The zygote's modules made ready before the fork: for each module file it forked a
// process for lately, a WasmEdge VM with that module loaded, validated and
// instantiated. A child forked after that only sets up WASI and calls _start: it skips
// the parse and the instantiation (most of a small module's start) and shares the
// module's code, tables and data pages with every other process of that module,
// instead of holding its own copy (the instantiation copies each function's code).
//
// A module is known by its bytes, never by its path or inode: two containers' rootfs
// paths differ for one image, and a changed file is another module. Modules that cannot
// be made ready (shim-wasm/src/fork_ready.h; a load whose trial in a forked copy went
// past its bounds, shim-wasm/src/trial_run.h; an import WASI lacks, a malformed file)
// are left to the child, which loads the file itself and reports the engine's error as
// ever; the shim's log says why, once.
//
// Threading: the zygote's only thread (serve_forks' before_fork); a child uses the VM it
// inherited.
#pragma once

#include <cstddef>
#include <list>
#include <string>

#include "trial_run.h"
#include "wasmedge_api.h"

namespace shim_wasm {

class ModuleCache {
 public:
  // `config`: the WasmEdge configure context (WASI registered) each VM is made from;
  // `spare`: a VM made from it (the zygote's check that the engine works), owned now;
  // `log_fd`: where its lines for the shim's log go (kZygoteLogFd; -1: nowhere).
  ModuleCache(const WasmEdgeApi& api, void* config, void* spare, int log_fd)
      : api_(api), config_(config), spare_(spare), log_fd_(log_fd) {}
  ~ModuleCache();
  ModuleCache(const ModuleCache&) = delete;
  ModuleCache& operator=(const ModuleCache&) = delete;

  // A module made ready: its VM, and the file's bytes it was made from.
  struct Entry {
    std::string bytes;
    void* vm;
    std::size_t cost = 0;  // the file's bytes and what instantiating it added to RSS
  };

  // The entry whose module is the file `module` (a path in the container) under the host
  // dir `rootfs`; nullptr when it cannot be made ready (the child then runs the file
  // itself). Reads the file every time; parses it only when new. Valid until the next
  // call. The file the child sees can differ (a mount of the spec over its dir, a write
  // since): the child checks it against `bytes` (file_holds, module_file.h).
  const Entry* ready(const std::string& rootfs, const std::string& module);

  // A VM that holds none of the cache's modules, for a child that runs its file itself;
  // made now when the last one went to a new module (a VM costs ~600 KiB: the zygote
  // keeps one only while a child needs it). nullptr when WasmEdge cannot make one.
  void* spare();

  // Bounds: what the zygote keeps is shared by its children but paid once per shim
  // (the file's bytes, to know it again, and what its VM and instance added to the
  // zygote's RSS). Past them the least recently used module goes; a larger file is
  // never kept. Modules that could not be made
  // ready are remembered by size and hash (kMaxRefused), so they are not parsed again.
  static constexpr std::size_t kMaxModules = 8;
  static constexpr std::size_t kMaxBytes = 64u << 20;
  static constexpr std::size_t kMaxRefused = 64;
  // A new module's load is tried first in a forked copy of the zygote (trial_run.h):
  // killed there past 64 MiB of growth, 500 ms of CPU or 2 s (well within the shim's
  // 10 s wait for the zygote's answer, with a request or two before it), it is left to
  // its own process.
  static constexpr TrialBounds kTrialBounds{64u << 20, std::chrono::milliseconds(500),
                                            std::chrono::milliseconds(2000),
                                            std::chrono::milliseconds(2)};

 private:
  // The module's VM, or nullptr with *why saying what kept it out and *for_good false
  // when another try might pass (a trial that waited on a busy machine, no fork).
  void* instantiate(const std::string& bytes, std::string* why, bool* for_good);
  // Loads, validates and instantiates `bytes` in `vm`: nullptr, or the step that failed
  // (*result its result).
  const char* load_steps(void* vm, const std::string& bytes, WasmEdgeResult* result) const;
  // Deletes a VM the cache does not keep, and gives what its module took back.
  void release(void* vm);
  bool refused_before(const std::string& bytes) const;
  void remember_refused(const std::string& bytes);
  // One line ("<message>\t<key>=<value>...") to log_fd_.
  void say(std::string line) const;

  const WasmEdgeApi& api_;
  void* config_;
  void* spare_;
  int log_fd_;
  std::list<Entry> entries_;                                // most recently used first
  std::size_t cost_ = 0;                                    // the entries' costs summed
  std::list<std::pair<std::size_t, std::size_t>> refused_;  // size, hash; newest first
};

}  // namespace shim_wasm
