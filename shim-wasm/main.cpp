// containerd-shim-wasm-v1: the Wasm runtime class on libshim (runtime_type
// "io.containerd.wasm.v1"). A container whose entrypoint is a WebAssembly module runs it
// in WasmEdge inside the container's namespaces and cgroup; any other runs through runc
// (docs/wasm.md).
#include "wasm_manager.h"

int main(int argc, char** argv) {
  shim_wasm::WasmManager manager(LIBSHIM_WASMEDGE_ROOT);
  return shim::run(argc, argv, manager);
}
