// The few functions of WasmEdge's C API (include/api/wasmedge/wasmedge.h, 0.14-0.17) the
// zygote calls, found with dlopen/dlsym: the zygote builds without WasmEdge's headers
// and runs with whichever libwasmedge.so.0 its loader's library path holds.
//
// Threading: load once in the zygote's only thread; the zygote (VMs and its module
// cache) and its children call the rest.
#pragma once

#include <cstdint>
#include <string>

namespace shim_wasm {

struct WasmEdgeResult {
  std::uint32_t code;
};
struct WasmEdgeString {
  std::uint32_t length;
  const char* buf;
};
struct WasmEdgeBytes {  // WasmEdge_Bytes: the length first
  std::uint32_t length;
  const std::uint8_t* buf;
};

class WasmEdgeApi {
 public:
  // dlopen("libwasmedge.so.0") and every symbol below; false with *error saying which
  // required one is missing.
  bool load(std::string* error);
  // Loads `size` bytes into `vm` through whichever load function the library has.
  WasmEdgeResult vm_load_bytes(void* vm, const std::uint8_t* bytes, std::uint32_t size) const {
    return vm_load_bytes_new != nullptr ? vm_load_bytes_new(vm, WasmEdgeBytes{size, bytes})
                                        : vm_load_buffer_old(vm, bytes, size);
  }

  void* (*configure_create)() = nullptr;
  void (*configure_add_host_registration)(void* config, int host) = nullptr;
  // An interpreter only, never the native code of a module's "wasmedge" custom section
  // (universal Wasm's AOT code, which 0.14-0.16 would load and run by default, from
  // bytes too). Required: a zygote that cannot say so does not start.
  void (*configure_set_force_interpreter)(void* config, bool on) = nullptr;
  void* (*vm_create)(const void* config, void* store) = nullptr;
  void* (*vm_get_import_module_context)(void* vm, int host) = nullptr;
  void (*module_instance_init_wasi)(void* module, const char* const* args, std::uint32_t args_len,
                                    const char* const* envs, std::uint32_t envs_len,
                                    const char* const* preopens,
                                    std::uint32_t preopens_len) = nullptr;
  void (*vm_delete)(void* vm) = nullptr;
  // A module runs step by step from its bytes: load, validate, instantiate, execute.
  // Never from a path: WasmEdge's loader given a path dlopens a file that is a shared
  // library (its AOT format), which would run native code in a copy of the zygote.
  // WasmEdge_VMLoadWasmFromBytes where the library has it (0.14+), else the older
  // WasmEdge_VMLoadWasmFromBuffer: one of the two is vm_load_bytes.
  WasmEdgeResult (*vm_load_bytes_new)(void* vm, WasmEdgeBytes bytes) = nullptr;
  WasmEdgeResult (*vm_load_buffer_old)(void* vm, const std::uint8_t* bytes,
                                       std::uint32_t size) = nullptr;
  WasmEdgeResult (*vm_validate)(void* vm) = nullptr;
  WasmEdgeResult (*vm_instantiate)(void* vm) = nullptr;
  WasmEdgeResult (*vm_execute)(void* vm, WasmEdgeString function, const void* params,
                               std::uint32_t params_len, void* returns,
                               std::uint32_t returns_len) = nullptr;
  WasmEdgeString (*string_create_by_c_string)(const char* text) = nullptr;
  std::uint32_t (*module_instance_wasi_get_exit_code)(const void* module) = nullptr;
  bool (*result_ok)(WasmEdgeResult result) = nullptr;
  const char* (*result_get_message)(WasmEdgeResult result) = nullptr;
  const char* (*version_get)() = nullptr;

  // WasmEdge_HostRegistration_Wasi.
  static constexpr int kHostRegistrationWasi = 0;
};

}  // namespace shim_wasm
