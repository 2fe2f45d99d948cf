// Where the WasmEdge engine lives and how a container runs it.
//
// The engine is a root directory whose usr/ holds bin/wasmedge, its libraries and an ELF
// loader: "/" for an installed package (Debian trixie or later, Ubuntu), or a private
// root that cmake/fetch-wasmedge.sh unpacks sid's packages into (bookworm's glibc is too
// old for them, so the engine always runs through the root's own loader). Inside a
// container that root's usr/ is bind-mounted read-only at /engine/usr.
//
// Threading: plain functions and values; find_engine() reads the file system.
#pragma once

#include <string>
#include <vector>

#include "shim/status.h"

namespace shim_wasm {

// Where a container sees the engine's usr/ (read-only) and the container's rootfs.
inline constexpr const char* kEngineMount = "/engine/usr";
inline constexpr const char* kRootfsMount = "/rootfs";

// The environment variable that overrides where the engine is (the shim inherits
// containerd's environment).
inline constexpr const char* kEngineRootEnv = "LIBSHIM_WASMEDGE_ROOT";

// An engine found on the host. Paths are relative to `root`'s usr/.
struct Engine {
  std::string root;                       // host dir holding usr/ ("/" for the system's)
  std::string binary = "bin/wasmedge";    // the CLI
  std::string loader;                     // e.g. lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
  std::vector<std::string> library_dirs;  // e.g. lib/x86_64-linux-gnu

  // <root>/usr (the bind mount's source).
  std::string usr() const;
  // The command that runs wasmedge with `args`, as a container sees it (under kEngineMount).
  std::vector<std::string> command(const std::vector<std::string>& args) const;
  // The same on the host (for `wasmedge --version` in -info).
  std::vector<std::string> host_command(const std::vector<std::string>& args) const;
  // The command that runs the zygote (host path `zygote`) on the engine's loader and
  // libraries, so it can load libwasmedge.
  std::vector<std::string> zygote_command(const std::string& zygote) const;

 private:
  // The engine's loader with its library path (`extra_dirs` after the engine's own).
  std::vector<std::string> loader_command(const std::vector<std::string>& extra_dirs) const;
};

// The engine root to use: $LIBSHIM_WASMEDGE_ROOT if set and non-empty, else
// `build_default` (the build's LIBSHIM_WASMEDGE_ROOT, where the fetch script puts it) if
// it holds usr/bin/wasmedge, else "/".
std::string engine_root(const std::string& build_default);

// Checks `root` for usr/bin/wasmedge, an ELF loader and libwasmedge; FailedPrecondition
// naming what is missing and where.
shim::Status find_engine(const std::string& root, Engine* engine);

}  // namespace shim_wasm
