// Whether the zygote may instantiate a module before it forks the module's process.
//
// The zygote is the shim's, outside every container's cgroup and namespaces, and one
// for all of them: what a module's instantiation does there must be bounded and must
// not be the module's own code. Instantiation runs a module's start function (the start
// section, not WASI's _start), so a module with one is left to its child. It also
// allocates what the module declares (WasmEdge fills a table's minimum size at once,
// maps a memory's minimum, keeps a record per declared local while validating; GC types
// allow allocations in initializers; each data segment may dirty pages of its own), so
// only modules whose declarations are bounded are taken. Anything else the child loads
// itself, as before.
//
// Threading: a plain function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shim_wasm {

// What a module instantiated in the zygote may declare: table entries (all tables'
// minimums summed), one memory's minimum pages (1 GiB), locals per function (V8's
// limit; params count) and in all, active or passive data segments.
inline constexpr std::uint64_t kMaxZygoteTableEntries = 1u << 20;
inline constexpr std::uint32_t kMaxZygoteMemoryPages = 16384;
inline constexpr std::uint64_t kMaxZygoteLocalsPerFunction = 50000;
inline constexpr std::uint64_t kMaxZygoteLocals = 1u << 20;
inline constexpr std::uint32_t kMaxZygoteDataSegments = 1024;
// The largest file, and the most items in any one section (imports, functions,
// globals, exports, elements...): the loader sizes its vectors from the counts, and a
// function's code grows ~32 bytes an instruction once loaded.
inline constexpr std::size_t kMaxZygoteModuleBytes = 4u << 20;
inline constexpr std::uint32_t kMaxZygoteSectionItems = 1u << 18;
// What the loader's objects grow from, ~90-160 bytes for a byte at worst (nested blocks,
// br_table labels, element indices, each an instruction or an expression): the code
// section's bytes, and all other sections' but data (bytes copied; its offsets must be
// constants) and custom ones, summed. So a module's load stays within tens of MiB
// (47 MiB for 512 KiB of nested blocks, the worst measured), and the cache's 64 MiB
// then apply.
inline constexpr std::size_t kMaxZygoteCodeBytes = 512u << 10;
inline constexpr std::size_t kMaxZygoteDeclarationBytes = 128u << 10;
// Params or results of one function type (V8's limit for each).
inline constexpr std::uint32_t kMaxZygoteTypeArity = 1000;

// True when `bytes` is a core module (magic, version 1) of at most
// kMaxZygoteModuleBytes whose section list is well formed to its end, with no start
// section (id 8), only function types and locals of one-byte value types, each vector
// section's count within its payload, function and code sections of one length, and
// declarations within the bounds above (a function's params count as its locals; one
// memory, neither shared nor 64-bit; data segments at constant offsets), and no
// "wasmedge" custom section (universal Wasm's native code). Otherwise false, and *why
// (if given) says what.
bool can_instantiate_before_fork(std::string_view bytes, std::string* why = nullptr);

}  // namespace shim_wasm
