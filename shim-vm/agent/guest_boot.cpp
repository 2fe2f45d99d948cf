#include "guest_boot.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "shim/fs.h"
#include "shim/linux/pod_network.h"
#include "shim/linux/vsock.h"

namespace shim_vm_agent {
namespace {

shim::Status errno_status(std::string_view what) {
  return shim::Status(shim::Code::kInternal, fmt::format("{}: {}", what, std::strerror(errno)));
}

shim::Status mount_one(const char* source, const char* target, const char* type,
                       unsigned long flags, const char* data) {
  ::mkdir(target, 0755);
  if (::mount(source, target, type, flags, data) != 0 && errno != EBUSY)
    return errno_status(fmt::format("mount {} on {}", type, target));
  return {};
}

}  // namespace

shim::Status leave_initramfs() {
  // The running agent stays mapped: its file may go.
  for (const char* path : {"/init", "/lib/modules"}) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  const char* next = "/newroot";
  ::mkdir(next, 0755);
  if (::mount("root", next, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
    return errno_status("mount tmpfs for the new root");
  if (::chdir(next) != 0) return errno_status("chdir /newroot");
  if (::mount(".", "/", nullptr, MS_MOVE, nullptr) != 0) return errno_status("move /newroot to /");
  if (::chroot(".") != 0) return errno_status("chroot");
  if (::chdir("/") != 0) return errno_status("chdir /");
  for (const char* dir : {"/dev", "/proc", "/sys", "/run", "/tmp", "/mnt"}) ::mkdir(dir, 0755);
  return {};
}

shim::Status mount_kernel_filesystems() {
  const unsigned long kSafe = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  struct Entry {
    const char* source;
    const char* target;
    const char* type;
    unsigned long flags;
    const char* data;
  };
  const Entry entries[] = {
      {"proc", "/proc", "proc", kSafe, nullptr},
      {"sysfs", "/sys", "sysfs", kSafe, nullptr},
      {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755"},
      {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666"},
      {"shm", "/dev/shm", "tmpfs", kSafe, "mode=1777"},
      {"cgroup2", "/sys/fs/cgroup", "cgroup2", kSafe, nullptr},
      {"run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"},
      {"tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"},
  };
  for (const Entry& e : entries) {
    if (shim::Status s = mount_one(e.source, e.target, e.type, e.flags, e.data); !s.ok()) return s;
  }
  // Containers get cgroups of their own under the root: delegate every controller.
  std::string controllers;
  if (shim::read_file("/sys/fs/cgroup/cgroup.controllers", &controllers).ok()) {
    std::string enable;
    std::size_t start = 0;
    while (start < controllers.size()) {
      std::size_t end = controllers.find_first_of(" \n", start);
      if (end == std::string::npos) end = controllers.size();
      if (end > start) enable += fmt::format("+{} ", controllers.substr(start, end - start));
      start = end + 1;
    }
    std::ofstream("/sys/fs/cgroup/cgroup.subtree_control") << enable;
    // The parent of every container's cgroup, there from the start: the pod's metrics.
    ::mkdir("/sys/fs/cgroup/containers", 0755);
    std::ofstream("/sys/fs/cgroup/containers/cgroup.subtree_control") << enable;
  }
  return {};
}

bool DeferredModules::defers(const std::string& name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

void DeferredModules::hold(std::string name, shim::UniqueFd fd) {
  held_.emplace_back(std::move(name), std::move(fd));
}

shim::Status DeferredModules::load() {
  for (auto& [name, fd] : held_) {
    // The driver probes the NICs qemu made as it registers: they exist when this returns.
    if (::syscall(SYS_finit_module, fd.get(), "", 0) != 0 && errno != EEXIST)
      return errno_status(fmt::format("load module {}", name));
  }
  held_.clear();
  return {};
}

shim::Status load_modules(const std::string& dir, DeferredModules* deferred,
                          const std::vector<std::string>& skipped) {
  std::ifstream order(dir + "/load-order");
  if (!order) return {};  // a kernel with everything built in
  std::string name;
  while (std::getline(order, name)) {
    if (name.empty()) continue;
    std::string path = dir + "/" + name;
    shim::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return errno_status(fmt::format("open module {}", path));
    if (std::find(skipped.begin(), skipped.end(), name) != skipped.end()) continue;
    if (deferred->defers(name)) {
      deferred->hold(name, std::move(fd));
      continue;
    }
    if (::syscall(SYS_finit_module, fd.get(), "", 0) != 0 && errno != EEXIST)
      return errno_status(fmt::format("load module {}", name));
  }
  return {};
}

void tune_page_reporting() {
  // Written after virtio_balloon registered: Linux 6.1's page_reporting_register() sets
  // the order from the driver, overriding a boot parameter (mm/page_reporting.c). Order 3
  // found 40 MiB more than order 9 and within 3 MiB of order 0, at 1/8 of its reports.
  const char* file = "/sys/module/page_reporting/parameters/page_reporting_order";
  std::ofstream out(file);
  out << "3";
  out.close();
  // Not fatal: the guest runs, only its freed memory goes back to the host in 2 MiB blocks.
  if (!out) std::fprintf(stderr, "libshim-vm-agent: warning: cannot write 3 to %s\n", file);
}

shim::Status set_guest_hostname(const std::string& name) {
  if (::sethostname(name.data(), name.size()) != 0) {
    return shim::Status(errno == EINVAL ? shim::Code::kInvalidArgument : shim::Code::kUnknown,
                        fmt::format("agent: sethostname {:?}: {}", name, std::strerror(errno)));
  }
  return {};
}

shim::Status mount_shared(const std::string& tag, const std::string& target) {
  ::mkdir(target.c_str(), 0755);
  if (::mount(tag.c_str(), target.c_str(), "virtiofs", MS_NOSUID | MS_NODEV, nullptr) != 0)
    return errno_status(fmt::format("mount virtiofs {} on {}", tag, target));
  return {};
}

shim::Status open_channel(const std::string& name, int timeout_ms, shim::UniqueFd* fd) {
  namespace fs = std::filesystem;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::error_code ec;
    for (const auto& port : fs::directory_iterator("/sys/class/virtio-ports", ec)) {
      std::string port_name;
      if (!shim::read_file((port.path() / "name").string(), &port_name).ok()) continue;
      while (!port_name.empty() && port_name.back() == '\n') port_name.pop_back();
      if (port_name != name) continue;
      std::string device = "/dev/" + port.path().filename().string();
      *fd = shim::UniqueFd(::open(device.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY));
      if (fd->get() >= 0) return {};
      if (errno != ENOENT) return errno_status(fmt::format("open {}", device));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return shim::Status(shim::Code::kNotFound,
                          fmt::format("no virtio-serial port named {}", name));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

shim::Status vsock_channel_port(std::uint32_t* port) {
  *port = 0;
  const char* value = std::getenv("libshim_channel");
  if (value == nullptr) return {};
  std::string channel = value;
  ::unsetenv("libshim_channel");  // not for the containers
  constexpr std::string_view kVsock = "vsock:";
  char* end = nullptr;
  unsigned long parsed =
      channel.starts_with(kVsock) ? std::strtoul(channel.c_str() + kVsock.size(), &end, 10) : 0;
  if (end == nullptr || *end != '\0' || parsed == 0 || parsed > 0xffffffffu) {
    return shim::Status(shim::Code::kInvalidArgument,
                        fmt::format("libshim_channel={:?}: want vsock:<port>", channel));
  }
  *port = static_cast<std::uint32_t>(parsed);
  return {};
}

shim::Status accept_vsock_channel(std::uint32_t port, shim::UniqueFd* fd) {
  std::string path = std::string(kSharedDir) + "/.agent-token";
  std::string token;
  if (!shim::read_file(path, &token).ok() || token.empty()) {
    return shim::Status(shim::Code::kNotFound, fmt::format("no token from the shim at {}", path));
  }
  // Nothing in the VM reads it after this; the shim removes the state dir anyway.
  if (::unlink(path.c_str()) != 0)
    std::fprintf(stderr, "libshim-vm-agent: warning: unlink %s: %s\n", path.c_str(),
                 std::strerror(errno));
  shim::UniqueFd listener;
  if (shim::Status s = shim::listen_vsock(port, &listener); !s.ok()) return s;
  shim::Status accepted = shim::accept_with_token(
      listener.get(), token, std::chrono::seconds(2), fd, [](const std::string& why) {
        std::fprintf(stderr, "libshim-vm-agent: closed a vsock connection: %s\n", why.c_str());
      });
  if (!accepted.ok())
    return shim::Status(accepted.code(),
                        fmt::format("vsock port {}: {}", port, accepted.message()));
  return {};  // the listener closes: no other connection gets in
}

shim::Status set_up_guest_network(const libshim::vm::agent::v1::SetupNetworkRequest& request) {
  shim::PodNetwork network;
  for (const auto& i : request.interfaces()) {
    network.interfaces.push_back({.name = i.name(),
                                  .mac = i.mac(),
                                  .mtu = i.mtu(),
                                  .addresses = {i.addresses().begin(), i.addresses().end()}});
  }
  for (const auto& r : request.routes())
    network.routes.push_back({.destination = r.destination(),
                              .gateway = r.gateway(),
                              .interface = r.interface(),
                              .metric = r.metric(),
                              .onlink = r.onlink(),
                              .source = r.source()});
  if (shim::Status s = shim::configure_pod_network(network); !s.ok())
    return shim::Status(s.code(), "set up the guest's network: " + s.message());
  return {};
}

}  // namespace shim_vm_agent
