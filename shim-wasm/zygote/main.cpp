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
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "clean_mappings.h"
#include "module_cache.h"
#include "module_file.h"
#include "module_payload.h"
#include "shim/process/fork_server.h"
#include "wasmedge_api.h"

namespace {

// What before_fork prepared for the request at hand: the module cache's entry for its
// module, instantiated, or else a VM without a module (the cache's spare).
struct Prepared {
  const shim_wasm::ModuleCache::Entry* ready = nullptr;
  void* spare = nullptr;
};

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
  const shim_wasm::WasmEdgeString start = api.string_create_by_c_string("_start");
  shim_wasm::WasmEdgeResult result =
      ready != nullptr
          ? api.vm_execute(vm, start, nullptr, 0, nullptr, 0)
          : api.vm_run_wasm_from_file(vm, module.c_str(), start, nullptr, 0, nullptr, 0);
  std::fflush(nullptr);
  if (!api.result_ok(result)) return 134;  // WasmEdge's CLI aborts here
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
