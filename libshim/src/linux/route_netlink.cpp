#include "shim/linux/route_netlink.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace shim {

namespace {

// One request: the header, a fixed message, attributes (nested ones by begin/end).
class Request {
 public:
  Request(std::uint16_t type, std::uint16_t flags) {
    nlmsghdr header{};
    header.nlmsg_type = type;
    header.nlmsg_flags = static_cast<std::uint16_t>(NLM_F_REQUEST | flags);
    add(&header, sizeof header);
  }
  void add(const void* data, std::size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
    bytes_.resize(NLMSG_ALIGN(bytes_.size()));
  }
  void attribute(std::uint16_t type, const void* data, std::size_t size) {
    rtattr head{};
    head.rta_len = static_cast<std::uint16_t>(RTA_LENGTH(size));
    head.rta_type = type;
    bytes_.append(reinterpret_cast<const char*>(&head), sizeof head);
    add(data, size);
  }
  void attribute(std::uint16_t type, const std::string& text) {
    attribute(type, text.c_str(), text.size() + 1);  // with its NUL
  }
  void attribute(std::uint16_t type, std::uint32_t value) { attribute(type, &value, sizeof value); }
  std::size_t begin(std::uint16_t type) {
    std::size_t at = bytes_.size();
    attribute(type, nullptr, 0);
    return at;
  }
  void end(std::size_t at) {
    auto* head = reinterpret_cast<rtattr*>(bytes_.data() + at);
    head->rta_len = static_cast<std::uint16_t>(bytes_.size() - at);
  }
  std::string finish() {
    reinterpret_cast<nlmsghdr*>(bytes_.data())->nlmsg_len =
        static_cast<std::uint32_t>(bytes_.size());
    return std::move(bytes_);
  }

 private:
  std::string bytes_;
};

std::string address_text(int family, const void* data) {
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(family, data, text, sizeof text) == nullptr) return {};
  return text;
}

std::string mac_text(const unsigned char* data, std::size_t size) {
  std::string text;
  for (std::size_t i = 0; i < size; ++i) text += fmt::format("{}{:02x}", i ? ":" : "", data[i]);
  return text;
}

// `text` of `family` into `out` (4 or 16 bytes); InvalidArgument naming it.
Status address_bytes(int family, const std::string& text, unsigned char (&out)[16],
                     std::size_t* size) {
  if (::inet_pton(family, text.c_str(), out) != 1)
    return Status(Code::kInvalidArgument, fmt::format("bad IP address {:?}", text));
  *size = family == AF_INET ? 4 : 16;
  return {};
}

// Each attribute of the message `reply` whose fixed part is `fixed` bytes.
template <typename Visit>
void each_attribute(const std::string& reply, std::size_t fixed, Visit visit) {
  const auto* header = reinterpret_cast<const nlmsghdr*>(reply.data());
  int size = static_cast<int>(header->nlmsg_len) - static_cast<int>(NLMSG_SPACE(fixed));
  const auto* attribute = reinterpret_cast<const rtattr*>(
      reinterpret_cast<const char*>(NLMSG_DATA(header)) + NLMSG_ALIGN(fixed));
  for (; RTA_OK(attribute, size); attribute = RTA_NEXT(attribute, size))
    visit(attribute->rta_type, RTA_DATA(attribute), RTA_PAYLOAD(attribute));
}

template <typename Fixed>
const Fixed* fixed_part(const std::string& reply) {
  return static_cast<const Fixed*>(NLMSG_DATA(reinterpret_cast<const nlmsghdr*>(reply.data())));
}

// NLMSG_OK without its comparison of signed and unsigned (clang's -Wsign-compare).
bool fits(const nlmsghdr* message, int size) {
  return size >= static_cast<int>(sizeof(nlmsghdr)) && message->nlmsg_len >= sizeof(nlmsghdr) &&
         message->nlmsg_len <= static_cast<std::uint32_t>(size);
}

// IFLA_INFO_KIND in the nested IFLA_LINKINFO at `data`: "veth", "tun", "bridge", ...
std::string link_kind(const void* data, std::size_t size) {
  int left = static_cast<int>(size);
  for (const auto* a = static_cast<const rtattr*>(data); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (a->rta_type == IFLA_INFO_KIND)
      return std::string(static_cast<const char*>(RTA_DATA(a)),
                         strnlen(static_cast<const char*>(RTA_DATA(a)), RTA_PAYLOAD(a)));
  }
  return {};
}

// The code for what the kernel answered `error` (an errno), so that callers can tell
// "already there" from "no such device".
Code code_of(int error) {
  switch (error) {
    case EEXIST:
      return Code::kAlreadyExists;
    case ENOENT:
    case ENODEV:
    case ESRCH:
      return Code::kNotFound;
    case EPERM:
    case EACCES:
      return Code::kPermissionDenied;
    case EINVAL:
    case ERANGE:
      return Code::kInvalidArgument;
    case EBUSY:
    case EAGAIN:
      return Code::kUnavailable;
    default:
      return Code::kInternal;
  }
}

Status netlink_error(std::string_view what, int error) {
  return Status(code_of(error),
                fmt::format("netlink {}: {} (errno {})", what, std::strerror(error), error));
}

}  // namespace

Status RouteNetlink::open(RouteNetlink* out) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return netlink_error("socket", errno);
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0)
    return netlink_error("bind", errno);
  out->fd_ = std::move(fd);
  return {};
}

Status RouteNetlink::exchange(std::string message, std::vector<std::string>* replies) {
  auto* header = reinterpret_cast<nlmsghdr*>(message.data());
  header->nlmsg_seq = ++sequence_;
  const bool dump = (header->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  if (!dump) header->nlmsg_flags |= NLM_F_ACK;
  if (::send(fd_.get(), message.data(), message.size(), 0) < 0) return netlink_error("send", errno);
  // The kernel sends a dump in datagrams of at most 32 KiB.
  std::string buffer(64 * 1024, '\0');
  bool interrupted = false;
  for (;;) {
    iovec part{.iov_base = buffer.data(), .iov_len = buffer.size()};
    msghdr received{};
    received.msg_iov = &part;
    received.msg_iovlen = 1;
    ssize_t got = ::recvmsg(fd_.get(), &received, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return netlink_error("recv", errno);
    if ((received.msg_flags & MSG_TRUNC) != 0)
      return Status(Code::kInternal, "netlink: an answer larger than 64 KiB was cut");
    int size = static_cast<int>(got);
    for (auto* reply = reinterpret_cast<const nlmsghdr*>(buffer.data()); fits(reply, size);
         reply = NLMSG_NEXT(reply, size)) {
      if (reply->nlmsg_seq != sequence_) continue;  // an answer to an earlier request
      if ((reply->nlmsg_flags & NLM_F_DUMP_INTR) != 0) interrupted = true;
      if (reply->nlmsg_type == NLMSG_DONE || reply->nlmsg_type == NLMSG_ERROR) {
        // NLMSG_DONE carries the dump's error (0 or -errno); NLMSG_ERROR the request's.
        int error = 0;
        if (reply->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
          std::memcpy(&error, NLMSG_DATA(reply), sizeof error);
        if (error != 0) return netlink_error("answer", -error);
        if (interrupted) {
          return Status(Code::kAborted,
                        "netlink: the dump was interrupted by a change (try again)");
        }
        return {};
      }
      if (replies != nullptr)
        replies->emplace_back(reinterpret_cast<const char*>(reply), reply->nlmsg_len);
    }
  }
}

Status RouteNetlink::dump(std::uint16_t type, const void* fixed, std::size_t size,
                          std::vector<std::string>* replies) {
  for (int attempt = 0;; ++attempt) {
    Request request(type, NLM_F_DUMP);
    request.add(fixed, size);
    replies->clear();
    Status s = exchange(request.finish(), replies);
    // A dump a concurrent change interrupted (CNI still at work) is read again.
    if (s.code() != Code::kAborted || attempt == 4) return s;
  }
}

Status RouteNetlink::links(std::vector<NetLink>* out) {
  ifinfomsg info{};
  std::vector<std::string> replies;
  if (Status s = dump(RTM_GETLINK, &info, sizeof info, &replies); !s.ok())
    return Status(s.code(), "list interfaces: " + s.message());
  for (const std::string& reply : replies) {
    if (reinterpret_cast<const nlmsghdr*>(reply.data())->nlmsg_type != RTM_NEWLINK) continue;
    const auto* fixed = fixed_part<ifinfomsg>(reply);
    NetLink link{.index = fixed->ifi_index, .flags = fixed->ifi_flags};
    each_attribute(reply, sizeof(ifinfomsg), [&](int type, const void* data, std::size_t size) {
      if (type == IFLA_IFNAME) link.name = static_cast<const char*>(data);
      if (type == IFLA_ADDRESS && size == ETH_ALEN)
        link.mac = mac_text(static_cast<const unsigned char*>(data), size);
      if (type == IFLA_MTU && size == 4) std::memcpy(&link.mtu, data, 4);
      if (type == IFLA_LINKINFO) link.kind = link_kind(data, size);
    });
    out->push_back(std::move(link));
  }
  return {};
}

Status RouteNetlink::addresses(std::vector<NetAddress>* out) {
  ifaddrmsg message{};
  std::vector<std::string> replies;
  if (Status s = dump(RTM_GETADDR, &message, sizeof message, &replies); !s.ok())
    return Status(s.code(), "list addresses: " + s.message());
  for (const std::string& reply : replies) {
    if (reinterpret_cast<const nlmsghdr*>(reply.data())->nlmsg_type != RTM_NEWADDR) continue;
    const auto* fixed = fixed_part<ifaddrmsg>(reply);
    NetAddress address{.index = static_cast<int>(fixed->ifa_index),
                       .family = fixed->ifa_family,
                       .prefix = fixed->ifa_prefixlen,
                       .scope = fixed->ifa_scope};
    std::string local, peer;
    each_attribute(reply, sizeof(ifaddrmsg), [&](int type, const void* data, std::size_t) {
      // IFA_LOCAL is the interface's own address; IFA_ADDRESS a point-to-point's peer.
      if (type == IFA_LOCAL) local = address_text(fixed->ifa_family, data);
      if (type == IFA_ADDRESS) peer = address_text(fixed->ifa_family, data);
    });
    address.address = local.empty() ? peer : local;
    if (!address.address.empty()) out->push_back(std::move(address));
  }
  return {};
}

Status RouteNetlink::routes(std::vector<NetRoute>* out) {
  rtmsg message{};
  std::vector<std::string> replies;
  if (Status s = dump(RTM_GETROUTE, &message, sizeof message, &replies); !s.ok())
    return Status(s.code(), "list routes: " + s.message());
  for (const std::string& reply : replies) {
    if (reinterpret_cast<const nlmsghdr*>(reply.data())->nlmsg_type != RTM_NEWROUTE) continue;
    const auto* fixed = fixed_part<rtmsg>(reply);
    std::uint32_t table = fixed->rtm_table;
    NetRoute route{.family = fixed->rtm_family,
                   .prefix = fixed->rtm_dst_len,
                   .scope = fixed->rtm_scope,
                   .protocol = fixed->rtm_protocol,
                   .flags = fixed->rtm_flags};
    each_attribute(reply, sizeof(rtmsg), [&](int type, const void* data, std::size_t size) {
      if (type == RTA_TABLE && size == 4) std::memcpy(&table, data, 4);
      if (type == RTA_DST) route.destination = address_text(fixed->rtm_family, data);
      if (type == RTA_GATEWAY) route.gateway = address_text(fixed->rtm_family, data);
      if (type == RTA_OIF && size == 4) std::memcpy(&route.index, data, 4);
      if (type == RTA_PRIORITY && size == 4) std::memcpy(&route.metric, data, 4);
      if (type == RTA_PREFSRC) route.source = address_text(fixed->rtm_family, data);
      if (type == RTA_MULTIPATH) route.multipath = true;
    });
    if (table == RT_TABLE_MAIN && fixed->rtm_type == RTN_UNICAST) out->push_back(std::move(route));
  }
  return {};
}

Status RouteNetlink::set_link(int index, const NetLinkChange& change) {
  Request request(RTM_NEWLINK, 0);
  ifinfomsg info{};
  info.ifi_index = index;
  if (change.up) {
    info.ifi_change = IFF_UP;
    info.ifi_flags = *change.up ? IFF_UP : 0;
  }
  request.add(&info, sizeof info);
  if (change.mtu) request.attribute(IFLA_MTU, *change.mtu);
  if (change.name) request.attribute(IFLA_IFNAME, *change.name);
  if (Status s = exchange(request.finish(), nullptr); !s.ok())
    return Status(s.code(), fmt::format("change interface {}: {}", index, s.message()));
  return {};
}

Status RouteNetlink::add_address(const NetAddress& address) {
  unsigned char bytes[16];
  std::size_t size = 0;
  if (Status s = address_bytes(address.family, address.address, bytes, &size); !s.ok()) return s;
  Request request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  ifaddrmsg message{};
  message.ifa_family = static_cast<std::uint8_t>(address.family);
  message.ifa_prefixlen = static_cast<std::uint8_t>(address.prefix);
  message.ifa_scope = static_cast<std::uint8_t>(address.scope);
  message.ifa_index = static_cast<std::uint32_t>(address.index);
  if (address.family == AF_INET6 && address.no_dad) message.ifa_flags = IFA_F_NODAD;
  request.add(&message, sizeof message);
  request.attribute(IFA_LOCAL, bytes, size);
  request.attribute(IFA_ADDRESS, bytes, size);
  if (address.family == AF_INET && address.prefix < 31) {  // as `ip addr add ... brd +`
    std::uint32_t host_bits = address.prefix == 0 ? ~0u : (1u << (32 - address.prefix)) - 1;
    std::uint32_t broadcast = 0;
    std::memcpy(&broadcast, bytes, 4);
    broadcast |= htonl(host_bits);
    request.attribute(IFA_BROADCAST, broadcast);
  }
  if (Status s = exchange(request.finish(), nullptr); !s.ok()) {
    return Status(s.code(), fmt::format("add address {}/{} to interface {}: {}", address.address,
                                        address.prefix, address.index, s.message()));
  }
  return {};
}

Status RouteNetlink::add_route(const NetRoute& route) {
  // Replacing: the guest's kernel may have made the same route for an address.
  Request request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
  rtmsg message{};
  message.rtm_family = static_cast<std::uint8_t>(route.family);
  message.rtm_dst_len = static_cast<std::uint8_t>(route.prefix);
  message.rtm_table = RT_TABLE_MAIN;
  message.rtm_protocol = static_cast<std::uint8_t>(route.protocol);
  message.rtm_scope = static_cast<std::uint8_t>(route.scope);
  message.rtm_type = RTN_UNICAST;
  message.rtm_flags = route.flags & RTNH_F_ONLINK;
  request.add(&message, sizeof message);
  unsigned char bytes[16];
  std::size_t size = 0;
  using Attribute = std::pair<int, const std::string*>;
  for (auto [type, text] :
       {Attribute{RTA_DST, &route.destination}, Attribute{RTA_GATEWAY, &route.gateway},
        Attribute{RTA_PREFSRC, &route.source}}) {
    if (text->empty()) continue;
    if (Status s = address_bytes(route.family, *text, bytes, &size); !s.ok()) return s;
    request.attribute(static_cast<std::uint16_t>(type), bytes, size);
  }
  if (route.index > 0) request.attribute(RTA_OIF, static_cast<std::uint32_t>(route.index));
  if (route.metric > 0) request.attribute(RTA_PRIORITY, route.metric);
  if (Status s = exchange(request.finish(), nullptr); !s.ok()) {
    return Status(s.code(), fmt::format("add route to {}/{} via {:?} on interface {}: {}",
                                        route.destination.empty() ? "default" : route.destination,
                                        route.prefix, route.gateway, route.index, s.message()));
  }
  return {};
}

Status RouteNetlink::remove_ingress(int index) {
  tcmsg message{};
  message.tcm_family = AF_UNSPEC;
  message.tcm_ifindex = index;
  message.tcm_handle = TC_H_MAKE(TC_H_INGRESS, 0);
  message.tcm_parent = TC_H_INGRESS;
  Request request(RTM_DELQDISC, 0);
  request.add(&message, sizeof message);
  request.attribute(TCA_KIND, std::string("ingress"));  // never a clsact qdisc
  Status s = exchange(request.finish(), nullptr);
  // None there: ENOENT, or EINVAL (also for a qdisc of another kind).
  if (s.ok() || s.code() == Code::kNotFound || s.code() == Code::kInvalidArgument) return {};
  return Status(s.code(),
                fmt::format("remove the ingress qdisc of interface {}: {}", index, s.message()));
}

Status RouteNetlink::redirect_ingress(int from, int to) {
  tcmsg message{};
  message.tcm_family = AF_UNSPEC;
  message.tcm_ifindex = from;
  message.tcm_handle = TC_H_MAKE(TC_H_INGRESS, 0);
  message.tcm_parent = TC_H_INGRESS;
  // An ingress qdisc an earlier VM of the pod left (its filter redirects to a tap that is
  // gone) goes first, with its filters.
  if (Status s = remove_ingress(from); !s.ok()) return s;

  Request qdisc(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL);
  qdisc.add(&message, sizeof message);
  qdisc.attribute(TCA_KIND, std::string("ingress"));
  if (Status s = exchange(qdisc.finish(), nullptr); !s.ok()) {
    return Status(s.code(),
                  fmt::format("add an ingress qdisc to interface {}: {}", from, s.message()));
  }

  Request filter(RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL);
  message.tcm_handle = 0;
  message.tcm_parent = TC_H_MAKE(TC_H_INGRESS, 0);
  message.tcm_info = TC_H_MAKE(1u << 16, htons(ETH_P_ALL));  // priority 1, every protocol
  filter.add(&message, sizeof message);
  filter.attribute(TCA_KIND, std::string("u32"));
  std::size_t options = filter.begin(TCA_OPTIONS);
  // The selector and its one key (tc_u32_sel ends in a flexible array): mask 0 matches
  // every packet.
  tc_u32_sel selector{};
  selector.flags = TC_U32_TERMINAL;
  selector.nkeys = 1;
  tc_u32_key key{};
  std::string match(reinterpret_cast<const char*>(&selector), sizeof selector);
  match.append(reinterpret_cast<const char*>(&key), sizeof key);
  filter.attribute(TCA_U32_SEL, match.data(), match.size());
  std::size_t actions = filter.begin(TCA_U32_ACT);
  std::size_t first = filter.begin(1);
  filter.attribute(TCA_ACT_KIND, std::string("mirred"));
  std::size_t mirred_options = filter.begin(TCA_ACT_OPTIONS);
  tc_mirred mirred{};
  mirred.action = TC_ACT_STOLEN;
  mirred.eaction = TCA_EGRESS_REDIR;
  mirred.ifindex = static_cast<std::uint32_t>(to);
  filter.attribute(TCA_MIRRED_PARMS, &mirred, sizeof mirred);
  filter.end(mirred_options);
  filter.end(first);
  filter.end(actions);
  filter.end(options);
  if (Status s = exchange(filter.finish(), nullptr); !s.ok()) {
    return Status(s.code(), fmt::format("redirect what interface {} receives to interface {}: {}",
                                        from, to, s.message()));
  }
  return {};
}

}  // namespace shim
