#include "shim/linux/pod_network.h"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "shim/linux/route_netlink.h"

namespace shim {

namespace {

Status sys_error(std::string_view what) {
  return Status(Code::kInternal, fmt::format("{}: {}", what, std::strerror(errno)));
}

// Runs `work` on a thread of its own in the network namespace `path`: setns(2) changes
// only the calling thread's, and no other thread of the shim may move.
Status in_network_namespace(const std::string& path, const std::function<Status()>& work) {
  Status result;
  std::thread worker([&] {
    UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) {
      result = sys_error(fmt::format("open the network namespace {}", path));
    } else if (::setns(ns.get(), CLONE_NEWNET) != 0) {
      result = sys_error(fmt::format("enter the network namespace {}", path));
    } else {
      result = work();
    }
  });
  worker.join();
  return result;
}

// A tap device named `name` (in the calling thread's network namespace).
Status open_tap(const std::string& name, UniqueFd* out) {
  UniqueFd fd(::open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open /dev/net/tun");
  ifreq request{};
  std::snprintf(request.ifr_name, IFNAMSIZ, "%s", name.c_str());
  request.ifr_flags = IFF_TAP | IFF_NO_PI;
  if (::ioctl(fd.get(), TUNSETIFF, &request) != 0)
    return sys_error(fmt::format("make the tap device {}", name));
  *out = std::move(fd);
  return {};
}

bool wanted_interface(const NetLink& link) {
  return (link.flags & IFF_LOOPBACK) == 0 && !link.mac.empty() && !link.name.starts_with("vmtap");
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
  for (const NetLink& link : links) {
    if (!wanted_interface(link)) continue;
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
    if (name == names.end() || r.protocol == RTPROT_KERNEL) continue;
    std::string destination =
        r.destination.empty() ? (r.family == AF_INET6 ? "::" : "0.0.0.0") : r.destination;
    network->routes.push_back({.destination = fmt::format("{}/{}", destination, r.prefix),
                               .gateway = r.gateway,
                               .interface = name->second});
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
    NetAddress address{.index = link.index, .scope = RT_SCOPE_UNIVERSE};
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
    for (std::size_t i = 0; i < indexes.size(); ++i) {
      std::string name = fmt::format("vmtap{}", i);
      UniqueFd tap;
      if (Status s = open_tap(name, &tap); !s.ok()) return s;
      int tap_index = static_cast<int>(::if_nametoindex(name.c_str()));
      if (tap_index == 0) return sys_error(fmt::format("the index of {}", name));
      NetLinkChange up{.up = true};
      if (network->interfaces[i].mtu > 0) up.mtu = network->interfaces[i].mtu;
      if (Status s = netlink.set_link(tap_index, up); !s.ok()) return s;
      if (Status s = netlink.redirect_ingress(indexes[i], tap_index); !s.ok()) return s;
      if (Status s = netlink.redirect_ingress(tap_index, indexes[i]); !s.ok()) return s;
      taps->push_back(std::move(tap));
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
  for (const PodInterface& want : network.interfaces) {
    auto link = std::find_if(links.begin(), links.end(),
                             [&](const NetLink& l) { return l.mac == want.mac; });
    if (link == links.end())
      return not_found(
          fmt::format("the guest's interface with MAC {} (for {})", want.mac, want.name));
    if (Status s = configure_interface(netlink, *link, want); !s.ok()) return s;
    indexes[want.name] = link->index;
  }
  std::vector<PodRoute> routes = network.routes;
  std::stable_partition(routes.begin(), routes.end(),
                        [](const PodRoute& r) { return r.gateway.empty(); });
  for (const PodRoute& r : routes) {
    NetRoute route{.gateway = r.gateway, .protocol = RTPROT_BOOT};
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
