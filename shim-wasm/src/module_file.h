// A module's file as the zygote reads it before a fork, and as its child checks it after.
//
// Threading: plain functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shim_wasm {

// The whole regular file at `fd`, if it is one of at most `limit` bytes; false
// otherwise (then nothing is kept of it).
bool read_module_file(int fd, std::size_t limit, std::string* out);

// True when the file at `path` (as the caller sees it: the child, in the container's
// root) is a regular file that holds exactly `bytes`. Reads it in small pieces onto the
// stack, never into the heap, whose pages a forked child would keep, and never through
// a mapping, which a file truncated meanwhile would answer with SIGBUS. A FIFO does not
// block it.
bool file_holds(const std::string& path, std::string_view bytes);

}  // namespace shim_wasm
