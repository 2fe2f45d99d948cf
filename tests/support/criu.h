// The CRIU that the checkpoint tests use: the one cmake/fetch-criu.sh unpacked into the
// test cache (<cache>/criu/bin/criu: Debian trixie's, since bookworm's 3.17 fails
// `criu check` on newer kernels). runc runs `criu` from its PATH, which is containerd's:
// a fixture puts criu_path_dir() in ContainerdOptions::path_prepend. See tests/README.md
// ("CRIU").
#pragma once

#include <optional>
#include <string>

namespace shim::test {

// <cache>/criu/bin, <cache> being $LIBSHIM_CACHE or else the configured
// LIBSHIM_CONTAINERD_CACHE (fetch-criu.sh's default, ~/.cache/libshim).
std::string criu_path_dir();

// Why a real checkpoint cannot work here, in one line: the cached CRIU is missing (with
// the script that fetches it), `criu check` fails (its first error line), or a dump of a
// plain process fails or hangs (the kernel, and where CRIU's log stops). nullopt when
// both pass. Checked once per test process.
std::optional<std::string> criu_unavailable();

// Whether criu_unavailable() is a dump that hangs: a test that runs a checkpoint even
// without a working CRIU (to compare the failures) cannot, it would hang as well.
bool criu_dump_hangs();

}  // namespace shim::test
