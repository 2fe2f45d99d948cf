#include "linux/pod_namespaces.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim::linux_pod {

namespace {

shim::Status open_ns(const std::string& path, shim::UniqueFd* fd) {
  fd->reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd->valid()) return shim::errno_error(fmt::format("open {}", path), errno);
  return {};
}

shim::Status set_ns(int fd, int type, std::string_view what) {
  if (::setns(fd, type) != 0) return shim::errno_error(what, errno);
  return {};
}

shim::Status enter_network(const PodPlan& plan) {
  if (!plan.own_network) return {};
  if (plan.netns_path.empty()) {
    // No CNI netns from CRI: a fresh one (only loopback), as runc gives a pause container
    // whose spec asks for a network namespace without a path.
    if (::unshare(CLONE_NEWNET) != 0) return shim::errno_error("unshare netns", errno);
    return {};
  }
  shim::UniqueFd netns;
  if (shim::Status s = open_ns(plan.netns_path, &netns); !s.ok()) {
    return shim::Status(s.code(), fmt::format("enter netns: {}", s.message()));
  }
  return set_ns(netns.get(), CLONE_NEWNET, fmt::format("enter netns {}", plan.netns_path));
}

shim::Status enter_uts(const PodPlan& plan) {
  if (!plan.own_uts) return {};
  if (::unshare(CLONE_NEWUTS) != 0) return shim::errno_error("unshare uts namespace", errno);
  if (plan.hostname.empty()) return {};  // the new UTS namespace starts with the host's name
  if (::sethostname(plan.hostname.data(), plan.hostname.size()) != 0) {
    return shim::errno_error(fmt::format("set hostname {:?}", plan.hostname), errno);
  }
  return {};
}

}  // namespace

shim::Status HostNamespaces::open(std::shared_ptr<const HostNamespaces>* out) {
  auto host = std::make_shared<HostNamespaces>();
  if (shim::Status s = open_ns("/proc/thread-self/ns/net", &host->net_); !s.ok()) return s;
  if (shim::Status s = open_ns("/proc/thread-self/ns/ipc", &host->ipc_); !s.ok()) return s;
  if (shim::Status s = open_ns("/proc/thread-self/ns/uts", &host->uts_); !s.ok()) return s;
  *out = std::move(host);
  return {};
}

shim::Status HostNamespaces::from_fds(const std::array<int, 3>& fds,
                                      std::shared_ptr<const HostNamespaces>* out) {
  auto host = std::make_shared<HostNamespaces>();
  std::array<shim::UniqueFd*, 3> mine = {&host->net_, &host->ipc_, &host->uts_};
  for (std::size_t i = 0; i < fds.size(); ++i) {
    mine[i]->reset(::fcntl(fds[i], F_DUPFD_CLOEXEC, 0));
    if (!mine[i]->valid()) {
      return shim::errno_error(fmt::format("host namespace fd {}", fds[i]), errno);
    }
  }
  *out = std::move(host);
  return {};
}

shim::Status HostNamespaces::enter() const {
  if (shim::Status s = set_ns(net_.get(), CLONE_NEWNET, "enter the host's netns"); !s.ok())
    return s;
  if (shim::Status s = set_ns(ipc_.get(), CLONE_NEWIPC, "enter the host's ipc namespace"); !s.ok())
    return s;
  return set_ns(uts_.get(), CLONE_NEWUTS, "enter the host's uts namespace");
}

bool on_main_thread() { return ::syscall(SYS_gettid) == ::getpid(); }

shim::Status enter_pod_namespaces(const PodPlan& plan) {
  if (shim::Status s = enter_network(plan); !s.ok()) return s;
  if (plan.own_ipc && ::unshare(CLONE_NEWIPC) != 0) {
    return shim::errno_error("unshare ipc namespace", errno);
  }
  return enter_uts(plan);
}

unsigned long namespace_inode(const std::string& pid, const std::string& kind) {
  struct stat st {};
  std::string path = fmt::format("/proc/{}/ns/{}", pid, kind);
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<unsigned long>(st.st_ino);
}

}  // namespace shim::linux_pod
