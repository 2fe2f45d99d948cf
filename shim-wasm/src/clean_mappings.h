// Drops the zygote's page-table entries of read-only file mappings that hold no page of
// their own (smaps: no Anonymous, not writable): loading the engine runs libLLVM's
// static constructors, which are spread over its 62 MiB of code, and each fault maps the
// 64 KiB around it (the kernel's fault-around), so ~44 MiB of code the interpreter never
// runs stayed mapped and counted in the zygote's RSS and PSS. The pages stay in the page
// cache (reclaimable once unmapped); whoever runs them again faults them back in, as
// each forked child does anyway (a fork copies no page-table entries of such mappings).
//
// Threading: a single-threaded process only (the zygote, between requests): another
// thread could remap an address between the scan and the madvise. It refuses otherwise.
#pragma once

#include <cstddef>
#include <string>

namespace shim_wasm {

// MADV_DONTNEED over each such mapping of /proc/self/smaps (no Anonymous and no Swap
// pages). Returns the KiB of RSS released; -1 with *error when smaps cannot be read or
// the process has more than one thread.
long release_clean_file_mappings(std::string* error);

}  // namespace shim_wasm
