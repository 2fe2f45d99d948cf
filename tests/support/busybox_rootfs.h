// A minimal container rootfs made of the static busybox binary and applet symlinks.
#pragma once

#include <string>

namespace shim::test {

inline constexpr const char* kBusyboxBinary = "/bin/busybox";  // Debian busybox-static

// Creates `dir` (and parents) holding bin/busybox plus symlinks for the common applets
// (sh, echo, cat, sleep, true, false, ls, ps, kill, env, id, ...) and the usual empty
// mount points (proc, sys, dev, tmp, run, etc). Usable as `ctr run --rootfs <dir> ...`.
// ctr gives such containers no PATH: run commands by absolute path (/bin/sh -c '...').
// Throws std::runtime_error when busybox is missing or not static.
void make_busybox_rootfs(const std::string& dir);

// True if /bin/busybox exists and is statically linked (usable inside any rootfs).
bool busybox_available();

}  // namespace shim::test
