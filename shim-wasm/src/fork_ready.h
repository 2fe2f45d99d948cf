// Whether the zygote may instantiate a module before it forks the module's process.
//
// Instantiation runs a module's start function (the start section, not WASI's _start):
// that is the container's code and must run in the container, never in the zygote. A
// module without one is only parsed, validated and laid out in memory by it, which is
// what every container of that module would repeat.
//
// Threading: a plain function.
#pragma once

#include <string_view>

namespace shim_wasm {

// True when `bytes` is a core module (magic, version 1) whose section list is well
// formed to its end and has no start section (id 8). False for anything else, which
// the child then loads itself, as the engine's errors tell.
bool can_instantiate_before_fork(std::string_view bytes);

}  // namespace shim_wasm
