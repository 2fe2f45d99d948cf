// What the Wasm shim tells its zygote about a module's process (the fork server's
// payload): the module's path as the container sees it, and the host dir of the
// container's root, where the zygote reads the module to make it ready before the fork.
// And where the zygote's log lines go.
//
// Threading: plain functions.
#pragma once

#include <string>
#include <string_view>

namespace shim_wasm {

// The zygote's fd for its own lines to the shim's log, "<message>\t<key>=<value>..."
// (stderr_relay.h); its stderr (the engine's, the fork server's) is logged line by line.
inline constexpr int kZygoteLogFd = 4;

struct ModulePayload {
  std::string module;  // absolute, in the container's root
  std::string rootfs;  // a host dir; empty when the zygote is not told
};

// "<module>\0<rootfs>": neither path can hold a NUL.
inline std::string encode_module_payload(const ModulePayload& payload) {
  std::string out = payload.module;
  out.push_back('\0');
  out += payload.rootfs;
  return out;
}

// The inverse; a payload without a NUL is a module path alone. One that is not what
// encode_module_payload makes of absolute paths (a second NUL, a relative path) gives
// an empty module, which nothing opens: a payload cut at a NUL elsewhere would name
// another file, a host one for the zygote.
inline ModulePayload decode_module_payload(std::string_view payload) {
  std::size_t nul = payload.find('\0');
  ModulePayload out;
  out.module = std::string(payload.substr(0, nul));
  if (nul != std::string_view::npos) out.rootfs = std::string(payload.substr(nul + 1));
  bool absolute_rootfs = out.rootfs.empty() || out.rootfs.front() == '/';
  if (!out.module.starts_with('/') || !absolute_rootfs ||
      out.rootfs.find('\0') != std::string::npos) {
    return {};
  }
  return out;
}

}  // namespace shim_wasm
