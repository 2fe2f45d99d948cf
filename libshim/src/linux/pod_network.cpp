#include "shim/linux/pod_network.h"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "shim/linux/route_netlink.h"

namespace shim {

namespace {

// `error`: errno, read at the call before anything could change it (the message is only
// formatted here).
template <typename... Args>
Status sys_error(int error, fmt::format_string<Args...> what, Args&&... args) {
  return Status(
      Code::kInternal,
      fmt::format("{}: {}", fmt::format(what, std::forward<Args>(args)...), std::strerror(error)));
}

// Runs `work` on a thread of its own in the network namespace `path`: setns(2) changes
// only the calling thread's, and no other thread of the shim may move.
Status in_network_namespace(const std::string& path, const std::function<Status()>& work) {
  Status result;
  auto run = [&] {
    UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) {
      result = sys_error(errno, "open the network namespace {}", path);
    } else if (::setns(ns.get(), CLONE_NEWNET) != 0) {
      result = sys_error(errno, "enter the network namespace {}", path);
    } else {
      try {
        result = work();
      } catch (const std::exception& e) {
        result = Status(Code::kInternal, fmt::format("in {}: {}", path, e.what()));
      }
    }
  };
  try {
    std::thread(run).join();
  } catch (const std::system_error& e) {  // no thread to be had
    return Status(Code::kResourceExhausted, fmt::format("a thread for {}: {}", path, e.what()));
  }
  return result;
}

// A tap device the kernel names from `pattern` ("vmtap%d": the first free one) in the
// calling thread's network namespace; its name in *name.
Status open_tap(const char* pattern, UniqueFd* out, std::string* name) {
  UniqueFd fd(::open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "open /dev/net/tun");
  ifreq request{};
  std::snprintf(request.ifr_name, IFNAMSIZ, "%s", pattern);
  request.ifr_flags = IFF_TAP | IFF_NO_PI;
  if (::ioctl(fd.get(), TUNSETIFF, &request) != 0)
    return sys_error(errno, "make a tap device {}", pattern);
  *name = request.ifr_name;
  *out = std::move(fd);
  return {};
}

// No IPv6 on the tap: the netns's own stack would send its router solicitations and
// neighbour discovery through it into the guest. A kernel without IPv6 has no file.
Status disable_ipv6(const std::string& interface) {
  std::string file = fmt::format("/proc/sys/net/ipv6/conf/{}/disable_ipv6", interface);
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errno == ENOENT ? Status() : sys_error(errno, "open {}", file);
  if (::write(fd.get(), "1", 1) != 1) return sys_error(errno, "write {}", file);
  return {};
}

bool wanted_interface(const NetLink& link) {
  // Down ones (gretap0, erspan0 a module made in every netns) and our taps are not the pod's.
  return (link.flags & IFF_LOOPBACK) == 0 && (link.flags & IFF_UP) != 0 && !link.mac.empty() &&
         link.mac != "00:00:00:00:00:00" && link.kind != "tun";
}

// The route `r` of the pod (on `interface`) as the guest adds it.
PodRoute pod_route(const NetRoute& r, const std::string& interface) {
  std::string destination =
      r.destination.empty() ? (r.family == AF_INET6 ? "::" : "0.0.0.0") : r.destination;
  return {.destination = fmt::format("{}/{}", destination, r.prefix),
          .gateway = r.gateway,
          .interface = interface,
          .metric = r.metric,
          .onlink = (r.flags & RTNH_F_ONLINK) != 0,
          .source = r.source};
}

// The pod's interfaces, addresses and routes as the netns has them.
Status read_network(RouteNetlink& netlink, PodNetwork* network, std::vector<int>* indexes) {
  std::vector<NetLink> links;
  std::vector<NetAddress> addresses;
  std::vector<NetRoute> routes;
  if (Status s = netlink.links(&links); !s.ok()) return s;
  if (Status s = netlink.addresses(&addresses); !s.ok()) return s;
  if (Status s = netlink.routes(&routes); !s.ok()) return s;
  std::map<int, std::string> names;
  std::map<std::string, std::string> by_mac;
  for (const NetLink& link : links) {
    if (!wanted_interface(link)) continue;
    if (auto [other, fresh] = by_mac.emplace(link.mac, link.name); !fresh) {
      return failed_precondition(fmt::format(
          "interfaces {} and {} share the MAC {}: the VM's NICs could not be told apart",
          other->second, link.name, link.mac));
    }
    PodInterface interface { .name = link.name, .mac = link.mac, .mtu = link.mtu };
    for (const NetAddress& a : addresses) {
      if (a.index == link.index && a.scope == RT_SCOPE_UNIVERSE)
        interface.addresses.push_back(fmt::format("{}/{}", a.address, a.prefix));
    }
    names[link.index] = link.name;
    indexes->push_back(link.index);
    network->interfaces.push_back(std::move(interface));
  }
  for (const NetRoute& r : routes) {
    auto name = names.find(r.index);
    if (r.multipath) {
      network->skipped.push_back(fmt::format(
          "multipath route to {}/{}", r.destination.empty() ? "default" : r.destination, r.prefix));
    }
    if (name == names.end() || r.protocol == RTPROT_KERNEL || r.protocol == RTPROT_RA) continue;
    network->routes.push_back(pod_route(r, name->second));
  }
  return {};
}

// "10.0.0.5/24" into its parts; InvalidArgument naming it.
Status split_prefix(const std::string& text, std::string* address, int* prefix, int* family) {
  std::size_t slash = text.rfind('/');
  if (slash == std::string::npos)
    return Status(Code::kInvalidArgument, fmt::format("{:?} has no /prefix", text));
  *address = text.substr(0, slash);
  *family = address->find(':') == std::string::npos ? AF_INET : AF_INET6;
  try {
    *prefix = std::stoi(text.substr(slash + 1));
  } catch (const std::exception&) {
    return Status(Code::kInvalidArgument, fmt::format("{:?}: bad prefix", text));
  }
  if (*prefix < 0 || *prefix > (*family == AF_INET ? 32 : 128))
    return Status(Code::kInvalidArgument, fmt::format("{:?}: bad prefix", text));
  return {};
}

Status configure_interface(RouteNetlink& netlink, const NetLink& link, const PodInterface& want) {
  NetLinkChange change;
  if (link.name != want.name) change.name = want.name;  // renamed while down
  if (want.mtu > 0) change.mtu = want.mtu;
  if (Status s = netlink.set_link(link.index, change); !s.ok()) return s;
  for (const std::string& text : want.addresses) {
    // No duplicate address detection: the pod's netns did it, and a tentative address
    // could not be a route's source.
    NetAddress address{.index = link.index, .scope = RT_SCOPE_UNIVERSE, .no_dad = true};
    if (Status s = split_prefix(text, &address.address, &address.prefix, &address.family); !s.ok())
      return s;
    if (Status s = netlink.add_address(address); !s.ok()) return s;
  }
  return netlink.set_link(link.index, {.up = true});
}

}  // namespace

Status plumb_pod_network(const std::string& netns_path, PodNetwork* network,
                         std::vector<UniqueFd>* taps) {
  return in_network_namespace(netns_path, [&]() -> Status {
    RouteNetlink netlink;
    if (Status s = RouteNetlink::open(&netlink); !s.ok()) return s;
    std::vector<int> indexes;
    if (Status s = read_network(netlink, network, &indexes); !s.ok()) return s;
    // A failure undoes this call's redirects: nothing of ours stays on the pod's interfaces.
    auto undo = [&](std::size_t made) {
      for (std::size_t j = 0; j <= made && j < indexes.size(); ++j)
        netlink.remove_ingress(indexes[j]).ignore_error();  // best effort, on an error path
      taps->clear();
    };
    for (std::size_t i = 0; i < indexes.size(); ++i) {
      const PodInterface& interface = network->interfaces[i];
      UniqueFd tap;
      std::string name;
      Status s = open_tap("vmtap%d", &tap, &name);
      int tap_index = s.ok() ? static_cast<int>(::if_nametoindex(name.c_str())) : 0;
      if (s.ok() && tap_index == 0) s = sys_error(errno, "the index of {}", name);
      if (s.ok()) {
        // Best effort: with IPv6 left on, only the netns's own neighbour discovery
        // reaches the guest.
        if (Status ipv6 = disable_ipv6(name); !ipv6.ok())
          network->skipped.push_back(fmt::format("IPv6 off on {}: {}", name, ipv6.message()));
      }
      NetLinkChange up{.up = true};
      if (interface.mtu > 0) up.mtu = interface.mtu;
      if (s.ok()) s = netlink.set_link(tap_index, up);
      if (s.ok()) s = netlink.redirect_ingress(indexes[i], tap_index);
      if (s.ok()) s = netlink.redirect_ingress(tap_index, indexes[i]);
      if (!s.ok()) {
        undo(i);
        return Status(s.code(),
                      fmt::format("tap {} for {}: {}", name, interface.name, s.message()));
      }
      taps->push_back(std::move(tap));
    }
    return {};
  });
}

Status unplumb_pod_network(const std::string& netns_path, const PodNetwork& network) {
  if (::access(netns_path.c_str(), F_OK) != 0) return {};
  return in_network_namespace(netns_path, [&]() -> Status {
    RouteNetlink netlink;
    if (Status s = RouteNetlink::open(&netlink); !s.ok()) return s;
    for (const PodInterface& interface : network.interfaces) {
      int index = static_cast<int>(::if_nametoindex(interface.name.c_str()));
      if (index == 0) continue;  // gone with the netns's owner
      if (Status s = netlink.remove_ingress(index); !s.ok()) return s;
    }
    return {};
  });
}

Status configure_pod_network(const PodNetwork& network) {
  RouteNetlink netlink;
  if (Status s = RouteNetlink::open(&netlink); !s.ok()) return s;
  std::vector<NetLink> links;
  if (Status s = netlink.links(&links); !s.ok()) return s;
  std::map<std::string, int> indexes;  // by the pod's interface name
  for (const NetLink& link : links) {
    if ((link.flags & IFF_LOOPBACK) != 0) {
      if (Status s = netlink.set_link(link.index, {.up = true}); !s.ok()) return s;
    }
  }
  // Each NIC first gets a temporary name (vmnic<n>), so that renaming one to a name
  // another NIC still has is no conflict.
  std::vector<NetLink> nics;
  for (const PodInterface& want : network.interfaces) {
    auto link = std::find_if(links.begin(), links.end(),
                             [&](const NetLink& l) { return l.mac == want.mac; });
    if (link == links.end())
      return not_found(
          fmt::format("the guest's interface with MAC {} (for {})", want.mac, want.name));
    NetLink nic = *link;
    nic.name = fmt::format("vmnic{}", nics.size());
    if (Status s = netlink.set_link(nic.index, {.name = nic.name}); !s.ok()) return s;
    nics.push_back(std::move(nic));
  }
  for (std::size_t i = 0; i < nics.size(); ++i) {
    const PodInterface& want = network.interfaces[i];
    if (Status s = configure_interface(netlink, nics[i], want); !s.ok())
      return Status(s.code(), fmt::format("{}: {}", want.name, s.message()));
    indexes[want.name] = nics[i].index;
  }
  std::vector<PodRoute> routes = network.routes;
  std::stable_partition(routes.begin(), routes.end(),
                        [](const PodRoute& r) { return r.gateway.empty(); });
  for (const PodRoute& r : routes) {
    NetRoute route{.gateway = r.gateway,
                   .protocol = RTPROT_BOOT,
                   .metric = r.metric,
                   .flags = r.onlink ? static_cast<std::uint32_t>(RTNH_F_ONLINK) : 0u,
                   .source = r.source};
    if (Status s = split_prefix(r.destination, &route.destination, &route.prefix, &route.family);
        !s.ok())
      return s;
    if (route.prefix == 0) route.destination.clear();
    route.scope = r.gateway.empty() ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
    auto index = indexes.find(r.interface);
    if (index == indexes.end())
      return not_found(fmt::format("route to {}: interface {}", r.destination, r.interface));
    route.index = index->second;
    if (Status s = netlink.add_route(route); !s.ok()) return s;
  }
  return {};
}

}  // namespace shim
