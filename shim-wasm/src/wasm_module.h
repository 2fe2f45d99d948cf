// A check of a WebAssembly file before the engine runs it: that it is a core module
// (not a component, not some other file) and imports only what WASI provides, so a bad
// module fails Create with a clear error instead of as an engine error after Start.
//
// Threading: plain functions; they read the file and hold no state.
#pragma once

#include <string>
#include <vector>

#include "shim/status.h"

namespace shim_wasm {

// The WASI import modules the engine provides (wasi_snapshot_preview1 and its
// predecessor's name).
bool is_wasi_import_module(std::string_view name);

// True when `path` starts with the WebAssembly magic "\0asm" (a module or component).
bool has_wasm_magic(const std::string& path);

// What check_module() found.
struct ModuleSummary {
  std::vector<std::string> imports;  // "<module>.<name>" of every import, in order
};

// Checks the file at `path` (a host path; `shown` is how errors name it, e.g. its path
// in the container): readable, the magic, core module version 1, a well-formed section
// list up to the import section, every import from WASI. InvalidArgument with the reason
// otherwise, e.g. "/app.wasm imports env.host_fn, which WASI does not provide".
shim::Status check_module(const std::string& path, const std::string& shown,
                          ModuleSummary* summary = nullptr);

// check_module of the module at `path` as the container sees it, opened in the host dir
// `rootfs` (open_in_rootfs): NotFound when it is not a regular file there.
shim::Status check_module_in_rootfs(const std::string& rootfs, const std::string& path);

}  // namespace shim_wasm
