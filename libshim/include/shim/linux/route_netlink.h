// RouteNetlink: a small rtnetlink (NETLINK_ROUTE) client for what a VM runtime does to a
// pod's network: read the interfaces, addresses and routes CNI made, plumb a tap device to
// an interface with tc, and set up a guest's interfaces from what was read.
//
// The socket works on the network namespace of the thread that opened it, for its life
// (enter the pod's netns, open, and everything done through it acts there).
//
// Errors carry the kernel's errno as a code: AlreadyExists (EEXIST), NotFound (ENOENT,
// ENODEV), PermissionDenied, InvalidArgument, Unavailable (EBUSY), else Internal.
//
// Threading: blocking calls; one thread at a time per object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim {

// A network interface (RTM_NEWLINK).
struct NetLink {
  int index = 0;            // its ifindex
  std::string name;         // "eth0"
  std::string mac;          // "02:42:ac:11:00:02"; "" without a hardware address
  std::uint32_t mtu = 0;    // its MTU in bytes
  std::uint32_t flags = 0;  // IFF_UP, IFF_LOOPBACK, ...
  std::string kind;         // IFLA_INFO_KIND: "veth", "tun", ...; "" for a physical one
};

// An address of an interface (RTM_NEWADDR).
struct NetAddress {
  int index = 0;        // the interface's ifindex
  int family = 0;       // AF_INET or AF_INET6
  std::string address;  // "10.88.0.5", "fd00::5"
  int prefix = 0;       // the prefix length: 24 for a /24
  int scope = 0;        // RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, ...
  bool no_dad = false;  // add_address(): IPv6 without duplicate address detection
};

// A route of the main table (RTM_NEWROUTE).
struct NetRoute {
  int family = 0;            // AF_INET or AF_INET6
  std::string destination;   // "" is the default route
  int prefix = 0;            // the destination's prefix length
  std::string gateway;       // "" without one
  int index = 0;             // the output interface; 0 without one
  int scope = 0;             // RT_SCOPE_LINK for a route on the link, else RT_SCOPE_UNIVERSE
  int protocol = 0;          // RTPROT_KERNEL: made by the kernel for an address
  std::uint32_t metric = 0;  // RTA_PRIORITY; 0: none
  std::uint32_t flags = 0;   // rtm_flags: RTNH_F_ONLINK is kept when adding
  std::string source;        // RTA_PREFSRC; "" without one
  bool multipath = false;    // RTA_MULTIPATH (its next hops are not read)
};

// What set_link() changes; each unset field is left as it is.
struct NetLinkChange {
  std::optional<bool> up;            // IFF_UP set or cleared
  std::optional<std::uint32_t> mtu;  // the MTU in bytes
  std::optional<std::string> name;   // the interface must be down
};

class RouteNetlink {
 public:
  // A socket in the calling thread's network namespace.
  static Status open(RouteNetlink* out);

  // Each interface, appended to `out`.
  Status links(std::vector<NetLink>* out);
  // Each address of each interface, appended to `out`.
  Status addresses(std::vector<NetAddress>* out);
  // Each unicast route of the main table, appended to `out`.
  Status routes(std::vector<NetRoute>* out);

  // Changes the interface `index` as `change` says.
  Status set_link(int index, const NetLinkChange& change);
  // Adds `address` to its interface (AlreadyExists if it has it); an IPv4 one with its
  // subnet's broadcast address.
  Status add_address(const NetAddress& address);
  // Adds `route` to the main table, replacing one with the same destination and metric.
  Status add_route(const NetRoute& route);
  // Everything `from` receives leaves through `to` (an ingress qdisc on `from` and a u32
  // filter matching all with a mirred egress redirect, as `tc filter add dev <from>
  // ingress protocol all u32 match u8 0 0 action mirred egress redirect dev <to>`),
  // replacing an ingress qdisc `from` had, with its filters.
  Status redirect_ingress(int from, int to);
  // Removes the ingress qdisc of interface `index` and its filters (none, or another kind
  // such as clsact there: no error, nothing removed).
  Status remove_ingress(int index);

 private:
  // Sends `message` (a complete nlmsghdr with its payload) and reads the answer: with
  // NLM_F_DUMP each reply into `replies` until NLMSG_DONE (Aborted when a change
  // interrupted it), else the ack. A kernel error's code says which (see above).
  Status exchange(std::string message, std::vector<std::string>* replies);
  // A dump of `type` with the fixed message `fixed`, read again if it was interrupted.
  Status dump(std::uint16_t type, const void* fixed, std::size_t size,
              std::vector<std::string>* replies);

  UniqueFd fd_;
  std::uint32_t sequence_ = 0;
};

}  // namespace shim
