// Whether the zygote may instantiate a module before it forks the module's process.
//
// The zygote is the shim's, outside every container's cgroup and namespaces, and one
// for all of them: what a module's instantiation does there must be bounded and must
// not be the module's own code. Instantiation runs a module's start function (the start
// section, not WASI's _start), so a module with one is left to its child. It also
// allocates what the module declares (WasmEdge fills a table's minimum size at once,
// and GC types allow allocations in initializers), so only modules whose declared
// tables are small, whose types are plain function types and whose memories are plain
// 32-bit ones are taken. Anything else the child loads itself, as before.
//
// Threading: a plain function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shim_wasm {

// The most table entries (all tables' minimums summed) instantiated in the zygote.
inline constexpr std::uint64_t kMaxZygoteTableEntries = 1u << 20;

// True when `bytes` is a core module (magic, version 1) whose section list is well
// formed to its end, with no start section (id 8), only function types of one-byte
// value types, tables of at most kMaxZygoteTableEntries entries in all, and memories
// neither shared nor 64-bit. Otherwise false, and *why (if given) says what.
bool can_instantiate_before_fork(std::string_view bytes, std::string* why = nullptr);

}  // namespace shim_wasm
