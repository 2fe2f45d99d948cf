// libshim-wasm-zygote: the Wasm shim's fork server (shim/process/fork_server.h). It loads
// WasmEdge once (libwasmedge and libLLVM behind it: most of a module's start), then
// makes each Wasm container's process as a fork of itself that runs the module, so a
// container starts without loading the engine again and shares its pages.
//
// The shim starts it through the engine root's own loader (shim-wasm/src/engine.h), so
// it runs on that root's glibc; it needs nothing of libshim's but the fork server.
//
// Before each fork the zygote makes the module ready (module_cache.h): read from the
// container's root on the host, instantiated once per distinct file.
//
// A child's payload is the module's path inside the container's root and that root's
// host dir (module_payload.h); its argv the OCI process's args (argv[0] becomes the
// module's file name, as WasmEdge's CLI passes it) and its env the module's
// environment. The container's root is the module's preopened "/". Exit status: the
// module's WASI exit code; 134 when it trapped or could not run (the engine has logged
// why, to stdout as its CLI does).
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "clean_mappings.h"
#include "module_cache.h"
#include "module_file.h"
#include "module_payload.h"
#include "shim/process/fork_server.h"
#include "shim/unique_fd.h"
#include "wasmedge_api.h"

namespace {

// What before_fork prepared for the request at hand: the module cache's entry for its
// module, instantiated, or else a VM without a module (the cache's spare).
struct Prepared {
  const shim_wasm::ModuleCache::Entry* ready = nullptr;
  void* spare = nullptr;
};

// The most a child reads of a module it loads itself: its own memory, in its container's
// cgroup (WasmEdge takes at most 4 GiB; no real module comes near 1 GiB).
constexpr std::size_t kMaxOwnModuleBytes = std::size_t{1} << 30;

// WasmEdge_Result's code for a run that WASI's proc_exit ended (ErrCode::Terminated,
// include/common/enum_errcode.hpp; category WASM, 0, in the high byte): success, for
// WasmEdge_ResultOK. A start function can end the module so, in instantiation.
constexpr std::uint32_t kResultTerminated = 0x01;

enum class Loaded { kFailed, kInstantiated, kExited };

// Loads, validates and instantiates in `vm` the module at `module` as this child sees it
// (in the container's root), from its bytes: WasmEdge's loader given the path would
// dlopen a shared library there (its AOT format), native code in a copy of the zygote,
// which holds other containers' modules. kFailed once a step failed (WasmEdge has logged
// why, to stdout as its CLI does; our own reasons go to stderr); kExited when the
// module's start function called proc_exit.
Loaded load_own_module(const shim_wasm::WasmEdgeApi& api, void* vm, const std::string& module) {
  // O_NONBLOCK: a FIFO at the path opens at once and is refused as not regular.
  shim::UniqueFd fd(::open(module.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  std::string bytes;
  if (fd.get() < 0 || !shim_wasm::read_module_file(fd.get(), kMaxOwnModuleBytes, &bytes)) {
    std::fprintf(stderr, "wasm: cannot read the module %s: %s\n", module.c_str(),
                 fd.get() < 0 ? std::strerror(errno) : "not a regular file of at most 1 GiB");
    return Loaded::kFailed;
  }
  if (!bytes.starts_with(std::string_view("\0asm", 4))) {
    std::fprintf(stderr, "wasm: %s is not a WebAssembly module\n", module.c_str());
    return Loaded::kFailed;
  }
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (!api.result_ok(api.vm_load_bytes(vm, data, static_cast<std::uint32_t>(bytes.size()))) ||
      !api.result_ok(api.vm_validate(vm))) {
    return Loaded::kFailed;
  }
  shim_wasm::WasmEdgeResult instantiated = api.vm_instantiate(vm);
  if (!api.result_ok(instantiated)) return Loaded::kFailed;
  return instantiated.code == kResultTerminated ? Loaded::kExited : Loaded::kInstantiated;
}

// Runs the module in this child's copy of the VM before_fork chose. The entry serves
// only when the file this child sees is the one it was made from; otherwise the module
// is loaded from the file, in the spare or, if none was made, a VM made here.
int run_module(const shim_wasm::WasmEdgeApi& api, void* config, Prepared prepared,
               const shim::ForkedChild& child) {
  const std::string module = shim_wasm::decode_module_payload(child.payload).module;
  const shim_wasm::ModuleCache::Entry* ready = prepared.ready;
  if (ready != nullptr && !shim_wasm::file_holds(module, ready->bytes)) ready = nullptr;
  void* vm = ready != nullptr ? ready->vm : prepared.spare;
  if (vm == nullptr) vm = api.vm_create(config, nullptr);
  if (vm == nullptr) {
    std::fprintf(stderr, "wasm zygote: cannot create a WasmEdge VM for %s\n", module.c_str());
    return 134;
  }
  std::vector<std::string> args = child.argv;
  std::string name = module.substr(module.rfind('/') + 1);
  if (args.empty()) {
    args.push_back(name);
  } else {
    args[0] = name;
  }
  std::vector<const char*> argv, envp;
  for (const std::string& a : args) argv.push_back(a.c_str());
  for (const std::string& e : child.env) envp.push_back(e.c_str());
  const char* preopens[] = {"/:/"};
  void* wasi = api.vm_get_import_module_context(vm, shim_wasm::WasmEdgeApi::kHostRegistrationWasi);
  api.module_instance_init_wasi(wasi, argv.data(), static_cast<std::uint32_t>(argv.size()),
                                envp.data(), static_cast<std::uint32_t>(envp.size()), preopens, 1);
  if (ready == nullptr) {
    Loaded loaded = load_own_module(api, vm, module);
    std::fflush(nullptr);
    if (loaded == Loaded::kFailed) return 134;  // WasmEdge's CLI aborts here
    if (loaded == Loaded::kExited)
      return static_cast<int>(api.module_instance_wasi_get_exit_code(wasi));
  }
  const shim_wasm::WasmEdgeString start = api.string_create_by_c_string("_start");
  shim_wasm::WasmEdgeResult result = api.vm_execute(vm, start, nullptr, 0, nullptr, 0);
  std::fflush(nullptr);
  if (!api.result_ok(result)) return 134;  // as WasmEdge's CLI
  return static_cast<int>(api.module_instance_wasi_get_exit_code(wasi));
}

}  // namespace

int main() {
  // The shim gives fd 4 for the zygote's own lines (a pipe). Run without it, the number
  // would go to the next fd opened, such as a request's answer socket: then no lines.
  struct stat log_fd {};
  const int log = ::fstat(shim_wasm::kZygoteLogFd, &log_fd) == 0 && S_ISFIFO(log_fd.st_mode)
                      ? shim_wasm::kZygoteLogFd
                      : -1;
  shim_wasm::WasmEdgeApi api;
  std::string error;
  if (!api.load(&error)) {
    std::fprintf(stderr, "wasm zygote: %s\n", error.c_str());
    return 1;
  }
  void* config = api.configure_create();
  api.configure_add_host_registration(config, shim_wasm::WasmEdgeApi::kHostRegistrationWasi);
  // A module is Wasm to run in the engine's sandbox, never native code it carries (a
  // "wasmedge" AOT section), here or in a child holding other containers' modules.
  api.configure_set_force_interpreter(config, true);
  // VMs (a store, loader, executor and WASI host module each) are made here, never in a
  // child: each child runs its module in its own copy of one, so the pages it wrote stay
  // shared (a VM made in each child cost 620 KiB of private heap) and the child skips
  // the work. This first one checks that the engine works; the cache then owns it.
  void* vm = api.vm_create(config, nullptr);
  if (vm == nullptr) {
    std::fprintf(stderr, "wasm zygote: cannot create a WasmEdge VM\n");
    return 1;
  }
  shim_wasm::ModuleCache modules(api, config, vm, log);
  Prepared prepared;  // for the request at hand
  shim::ForkServerHooks hooks;
  hooks.before_fork = [&modules, &prepared](const shim::ForkedChild& child) {
    prepared = Prepared();
    const shim_wasm::ModulePayload payload = shim_wasm::decode_module_payload(child.payload);
    prepared.ready = modules.ready(payload.rootfs, payload.module);
    if (prepared.ready == nullptr) prepared.spare = modules.spare();
  };
  hooks.entry = [&api, config, &prepared](const shim::ForkedChild& child) {
    return run_module(api, config, prepared, child);
  };
  // Once no request came for 100 ms (after the first Create, which the shim sends at
  // once, or at start in a shim that runs no module): the scan takes ~3 ms of CPU,
  // which neither a container's start nor a shim that serves one container and ends (a
  // shim of its own) should pay.
  hooks.when_idle = [] {
    std::string why;
    if (shim_wasm::release_clean_file_mappings(&why) < 0)
      std::fprintf(stderr, "wasm zygote: %s (its RSS stays as loaded)\n", why.c_str());
  };
  return shim::serve_forks(shim::kForkServerFd, std::move(hooks));
}
