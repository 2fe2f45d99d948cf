#include "wasmedge_api.h"

#include <dlfcn.h>

namespace shim_wasm {
namespace {

template <typename F>
bool find(void* library, const char* name, F* out, std::string* error) {
  void* symbol = ::dlsym(library, name);
  if (symbol == nullptr) {
    *error = std::string("libwasmedge.so.0 has no ") + name;
    return false;
  }
  *out = reinterpret_cast<F>(symbol);
  return true;
}

// Leaves *out null when the library lacks it; always true (for the && chain).
template <typename F>
bool find_optional(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(library, name));
  return true;
}

}  // namespace

bool WasmEdgeApi::load(std::string* error) {
  // Never closed: the children are forks of this process and run the engine it loaded.
  void* library = ::dlopen("libwasmedge.so.0", RTLD_NOW);
  if (library == nullptr) {
    const char* why = ::dlerror();
    *error = std::string("dlopen libwasmedge.so.0: ") + (why != nullptr ? why : "?");
    return false;
  }
  return find(library, "WasmEdge_ConfigureCreate", &configure_create, error) &&
         find(library, "WasmEdge_ConfigureAddHostRegistration", &configure_add_host_registration,
              error) &&
         find(library, "WasmEdge_ConfigureSetForceInterpreter", &configure_set_force_interpreter,
              error) &&
         find(library, "WasmEdge_VMCreate", &vm_create, error) &&
         find(library, "WasmEdge_VMGetImportModuleContext", &vm_get_import_module_context, error) &&
         find(library, "WasmEdge_ModuleInstanceInitWASI", &module_instance_init_wasi, error) &&
         find(library, "WasmEdge_VMDelete", &vm_delete, error) &&
         find_optional(library, "WasmEdge_VMLoadWasmFromBytes", &vm_load_bytes_new) &&
         find_optional(library, "WasmEdge_VMLoadWasmFromBuffer", &vm_load_buffer_old) &&
         (vm_load_bytes_new != nullptr || vm_load_buffer_old != nullptr ||
          find(library, "WasmEdge_VMLoadWasmFromBytes", &vm_load_bytes_new, error)) &&
         find(library, "WasmEdge_VMValidate", &vm_validate, error) &&
         find(library, "WasmEdge_VMInstantiate", &vm_instantiate, error) &&
         find(library, "WasmEdge_VMExecute", &vm_execute, error) &&
         find_optional(library, "WasmEdge_ResultGetMessage", &result_get_message) &&
         find(library, "WasmEdge_StringCreateByCString", &string_create_by_c_string, error) &&
         find(library, "WasmEdge_ModuleInstanceWASIGetExitCode",
              &module_instance_wasi_get_exit_code, error) &&
         find(library, "WasmEdge_ResultOK", &result_ok, error) &&
         find(library, "WasmEdge_VersionGet", &version_get, error);
}

}  // namespace shim_wasm
