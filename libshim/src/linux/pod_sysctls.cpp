#include "linux/pod_sysctls.h"

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim::linux_pod {

namespace {

shim::Status bad_key(std::string_view key, std::string_view why) {
  return shim::Status(shim::Code::kInvalidArgument, fmt::format("sysctl {:?}: {}", key, why));
}

bool is_ipc_sysctl(std::string_view key) {
  return key.starts_with("kernel.shm") || key.starts_with("kernel.msg") || key == "kernel.sem" ||
         key.starts_with("fs.mqueue.");
}

}  // namespace

shim::Status sysctl_file(std::string_view key, std::string* relative) {
  relative->clear();
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = key.find('.', start);
    std::string part(key.substr(start, dot == std::string_view::npos ? dot : dot - start));
    for (char& c : part) {
      if (c == '/') c = '.';
    }
    if (part.empty() || part == "." || part == "..") return bad_key(key, "not a sysctl name");
    if (!relative->empty()) *relative += '/';
    *relative += part;
    if (dot == std::string_view::npos) return {};
    start = dot + 1;
  }
}

shim::Status check_sysctl(std::string_view key, bool own_network, bool own_ipc) {
  if (key.starts_with("net.")) {
    if (own_network) return {};
    return bad_key(key, "not allowed in the host's network namespace (hostNetwork pod)");
  }
  if (is_ipc_sysctl(key)) {
    if (own_ipc) return {};
    return bad_key(key, "not allowed in the host's IPC namespace (hostIPC pod)");
  }
  return bad_key(key,
                 "not a namespaced sysctl (net.*, kernel.shm*, kernel.msg*, kernel.sem, "
                 "fs.mqueue.*): it would change the host");
}

shim::Status check_sysctls(const std::map<std::string, std::string>& sysctls, bool own_network,
                           bool own_ipc) {
  for (const auto& [key, value] : sysctls) {
    std::string relative;
    if (shim::Status s = sysctl_file(key, &relative); !s.ok()) return s;
    if (shim::Status s = check_sysctl(key, own_network, own_ipc); !s.ok()) return s;
  }
  return {};
}

shim::Status write_sysctls(const std::string& proc_sys,
                           const std::map<std::string, std::string>& sysctls) {
  for (const auto& [key, value] : sysctls) {
    std::string relative;
    if (shim::Status s = sysctl_file(key, &relative); !s.ok()) return s;
    std::string path = fmt::format("{}/{}", proc_sys, relative);
    if (shim::Status s = shim::write_existing_file(path, value); !s.ok()) {
      return shim::Status(s.code(), fmt::format("set sysctl {}={}: {}", key, value, s.message()));
    }
  }
  return {};
}

}  // namespace shim::linux_pod
