#include "linux/pod_files.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim::linux_pod {

namespace {

constexpr std::string_view kControllerDir = "io.containerd.sandbox.controller.v1.shim";
constexpr std::string_view kCriPluginDir = "io.containerd.grpc.v1.cri";
// podsandbox's defaultShmSize (64 MiB) and its mount data, as podsandbox formats it.
constexpr std::string_view kShmData = "mode=1777,size=67108864";

std::string strip_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// "<dir>/<controller>/<ns>/<id>" -> "<dir>"; "" when `path` is not that deep or the
// controller's directory is not where it belongs.
std::string three_up(const std::string& path) {
  std::string dir = strip_trailing_slashes(path);
  for (int i = 0; i < 2; ++i) {
    std::size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash == 0) return {};
    dir.resize(slash);
  }
  std::size_t slash = dir.rfind('/');
  if (slash == std::string::npos || std::string_view(dir).substr(slash + 1) != kControllerDir)
    return {};
  return slash == 0 ? std::string("/") : dir.substr(0, slash);
}

shim::Status copy_file(const std::string& from, const std::string& to) {
  std::string content;
  if (shim::Status s = shim::read_file(from, &content); !s.ok()) return s;
  return shim::write_file(to, content, 0644);
}

// Removes `path`; a missing one is fine. Keeps the first error in `first`.
void remove_one(const std::string& path, bool directory, shim::Status* first) {
  int rc = directory ? ::rmdir(path.c_str()) : ::unlink(path.c_str());
  if (rc == 0 || errno == ENOENT || (directory && errno == ENOTEMPTY)) return;
  if (first->ok()) *first = shim::errno_error(fmt::format("remove {}", path), errno);
}

}  // namespace

shim::Status containerd_dirs_from_bundle(const std::string& bundle, ContainerdDirs* dirs) {
  dirs->state = three_up(bundle);
  if (dirs->state.empty()) {
    return shim::Status(
        shim::Code::kFailedPrecondition,
        fmt::format("find containerd's state dir: bundle {} is not <state>/{}/<ns>/<id>", bundle,
                    kControllerDir));
  }
  std::string link = strip_trailing_slashes(bundle) + "/work";
  char target[PATH_MAX];
  ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (n < 0) {
    shim::Status s = shim::errno_error(fmt::format("readlink {}", link), errno);
    return shim::Status(shim::Code::kFailedPrecondition,
                        fmt::format("find containerd's root dir: {}", s.message()));
  }
  dirs->root = three_up(std::string(target, static_cast<std::size_t>(n)));
  if (dirs->root.empty()) {
    return shim::Status(
        shim::Code::kFailedPrecondition,
        fmt::format("find containerd's root dir: {} -> {} is not <root>/{}/<ns>/<id>", link,
                    std::string_view(target, static_cast<std::size_t>(n)), kControllerDir));
  }
  return {};
}

PodFilePaths PodFilePaths::of(const ContainerdDirs& dirs, const std::string& id) {
  PodFilePaths paths;
  paths.root_dir = fmt::format("{}/{}/sandboxes/{}", dirs.root, kCriPluginDir, id);
  paths.state_dir = fmt::format("{}/{}/sandboxes/{}", dirs.state, kCriPluginDir, id);
  paths.hostname = paths.root_dir + "/hostname";
  paths.hosts = paths.root_dir + "/hosts";
  paths.resolv_conf = paths.root_dir + "/resolv.conf";
  paths.shm = paths.state_dir + "/shm";
  return paths;
}

std::string resolv_conf_from_dns(const shim::cri::DNSConfig& dns) {
  std::string content;
  auto join = [](const auto& list, std::string_view separator) {
    std::string out;
    for (const std::string& item : list) {
      if (!out.empty()) out += separator;
      out += item;
    }
    return out;
  };
  if (dns.searches_size() > 0) content += fmt::format("search {}\n", join(dns.searches(), " "));
  if (dns.servers_size() > 0) {
    content += fmt::format("nameserver {}\n", join(dns.servers(), "\nnameserver "));
  }
  if (dns.options_size() > 0) content += fmt::format("options {}\n", join(dns.options(), " "));
  return content;
}

shim::Status write_pod_files(const PodFilePaths& paths, const shim::cri::PodSandboxConfig& config,
                             const std::string& host_name, const HostFiles& host, bool host_ipc,
                             std::vector<std::string>* written) {
  if (shim::Status s = shim::make_dirs(paths.root_dir, 0755); !s.ok()) return s;
  std::string hostname = config.hostname().empty() ? host_name : config.hostname();
  if (shim::Status s = shim::write_file(paths.hostname, hostname + "\n", 0644); !s.ok()) return s;
  written->push_back(paths.hostname);
  if (shim::Status s = copy_file(host.hosts, paths.hosts); !s.ok()) return s;
  written->push_back(paths.hosts);
  // podsandbox tests GetDnsConfig() != nil: an empty DNSConfig gives an empty file.
  shim::Status resolv =
      config.has_dns_config()
          ? shim::write_file(paths.resolv_conf, resolv_conf_from_dns(config.dns_config()), 0644)
          : copy_file(host.resolv_conf, paths.resolv_conf);
  if (!resolv.ok()) return resolv;
  written->push_back(paths.resolv_conf);
  // A hostIPC pod's containers get the host's /dev/shm from CRI itself.
  if (host_ipc) return {};
  if (shim::Status s = shim::make_dirs(paths.shm, 0700); !s.ok()) return s;
  if (::mount("shm", paths.shm.c_str(), "tmpfs", MS_NOEXEC | MS_NOSUID | MS_NODEV,
              kShmData.data()) != 0) {
    return shim::errno_error(fmt::format("mount shm on {}", paths.shm), errno);
  }
  written->push_back(paths.shm);
  return {};
}

shim::Status remove_pod_files(const PodFilePaths& paths) {
  shim::Status first;
  // Detached: a container being torn down may still hold it; EINVAL is "not a mount".
  if (::umount2(paths.shm.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
    first = shim::errno_error(fmt::format("unmount {}", paths.shm), errno);
  }
  remove_one(paths.shm, true, &first);
  remove_one(paths.hostname, false, &first);
  remove_one(paths.hosts, false, &first);
  remove_one(paths.resolv_conf, false, &first);
  remove_one(paths.state_dir, true, &first);
  remove_one(paths.root_dir, true, &first);
  return first;
}

}  // namespace shim::linux_pod
