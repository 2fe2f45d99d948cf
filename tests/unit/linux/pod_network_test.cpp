// A pod's network handed to a VM (shim/linux/pod_network.h), for real, as root: network
// namespaces made with iproute2 as CNI's are, a veth in the "pod" with its peer in a
// "bridge" namespace; the taps' traffic checked both ways; a "guest" namespace configured
// from what was read.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "shim/linux/pod_network.h"
#include "shim/linux/route_netlink.h"
#include "support/skip.h"

namespace {

// Named network namespaces, removed at the end.
class Netns {
 public:
  explicit Netns(std::string role) : name_(fmt::format("libshim-{}-{}", role, ::getpid())) {
    ok_ = std::system(fmt::format("ip netns add {}", name_).c_str()) == 0;
  }
  ~Netns() {
    if (ok_) (void)std::system(fmt::format("ip netns del {}", name_).c_str());
  }
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  std::string path() const { return "/var/run/netns/" + name_; }

 private:
  std::string name_;
  bool ok_ = false;
};

bool run(const std::string& command) { return std::system(command.c_str()) == 0; }

std::string output_of(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) out.append(buffer, n);
    ::pclose(p);
  }
  return out;
}

// Runs `work` on a thread in the namespace `path` (the test runner's threads stay);
// whether it could enter it.
template <typename Work>
bool in_netns(const std::string& path, Work work) {
  bool entered = false;
  std::thread([&] {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    entered = fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0;
    if (fd >= 0) ::close(fd);
    if (entered) work();
  }).join();
  return entered;
}

// No IPv6 (its neighbour discovery would add frames the test does not expect).
bool without_ipv6(const Netns& ns) {
  return run(
      fmt::format("ip netns exec {} sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/"
                  "disable_ipv6 && echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6'",
                  ns.name()));
}

}  // namespace

TEST_CASE(
    "pod network: taps beside the pod's interfaces carry its traffic, a guest gets its "
    "addresses and routes",
    "[linux][pod-network]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root for network namespaces");
  Netns pod("pod"), bridge("bridge"), guest("guest");
  if (!pod.ok() || !bridge.ok() || !guest.ok()) LIBSHIM_SKIP("ip netns add failed");
  REQUIRE(without_ipv6(pod));
  REQUIRE(without_ipv6(bridge));
  const std::string mac = "02:00:0a:63:00:05";
  REQUIRE(
      run(fmt::format("ip -n {} link add eth0 address {} mtu 1400 type veth peer name br0 "
                      "netns {}",
                      pod.name(), mac, bridge.name())));
  REQUIRE(
      run(fmt::format("ip -n {0} addr add 10.99.0.5/24 dev eth0 && ip -n {0} link set eth0 "
                      "up && ip -n {0} route add default via 10.99.0.1 && "
                      "ip -n {0} route add 10.98.0.0/16 via 10.99.0.2 metric 7 && "
                      "ip -n {0} route add 10.97.0.0/16 via 10.96.0.1 dev eth0 onlink",
                      pod.name())));
  REQUIRE(run(fmt::format("ip -n {0} addr add 10.99.0.1/24 dev br0 && ip -n {0} link set br0 up",
                          bridge.name())));
  // Not the pod's: a device that is down (as gretap0 of ip_gre in every netns).
  REQUIRE(run(fmt::format("ip -n {} link add gone0 type veth peer name gone1", pod.name())));

  shim::PodNetwork network;
  std::vector<shim::UniqueFd> taps;
  shim::Status plumbed = shim::plumb_pod_network(pod.path(), &network, &taps);
  INFO(plumbed.message());
  REQUIRE(plumbed.ok());
  REQUIRE(network.interfaces.size() == 1);
  REQUIRE(taps.size() == 1);
  CHECK(network.interfaces[0].name == "eth0");
  CHECK(network.interfaces[0].mac == mac);
  CHECK(network.interfaces[0].mtu == 1400);
  CHECK(network.interfaces[0].addresses == std::vector<std::string>{"10.99.0.5/24"});
  // Not the kernel's route for the address: the guest's kernel makes its own.
  REQUIRE(network.routes.size() == 3);
  CHECK(network.routes[0].destination == "0.0.0.0/0");
  CHECK(network.routes[0].gateway == "10.99.0.1");
  CHECK(network.routes[0].interface == "eth0");
  CHECK(network.routes[1].destination == "10.97.0.0/16");
  CHECK(network.routes[1].onlink);
  CHECK(network.routes[2].destination == "10.98.0.0/16");
  CHECK(network.routes[2].gateway == "10.99.0.2");
  CHECK(network.routes[2].metric == 7);
  // The tap has no IPv6 of its own to send into the guest.
  CHECK(output_of(fmt::format("ip netns exec {} cat /proc/sys/net/ipv6/conf/vmtap0/disable_ipv6",
                              pod.name())) == "1\n");

  std::string filters = output_of(fmt::format("tc -n {} filter show dev eth0 ingress", pod.name()));
  CHECK(filters.find("Egress Redirect to device vmtap0") != std::string::npos);
  filters = output_of(fmt::format("tc -n {} filter show dev vmtap0 ingress", pod.name()));
  CHECK(filters.find("Egress Redirect to device eth0") != std::string::npos);

  // The bridge's side talks to 10.99.0.5: its ARP request reaches the tap (the VM's NIC).
  REQUIRE(in_netns(bridge.path(), [] {
    int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    ::inet_pton(AF_INET, "10.99.0.5", &to.sin_addr);
    (void)::sendto(udp, "x", 1, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    ::close(udp);
  }));
  unsigned char frame[2048];
  pollfd readable{.fd = taps[0].get(), .events = POLLIN};
  REQUIRE(::poll(&readable, 1, 5000) == 1);
  ssize_t got = ::read(taps[0].get(), frame, sizeof frame);
  REQUIRE(got >= 42);
  CHECK((frame[12] << 8 | frame[13]) == 0x0806);  // ARP, from the bridge's side
  CHECK(frame[21] == 1);                          // a request
  // What the VM sends leaves through eth0 to the bridge's side.
  std::string before = output_of(
      fmt::format("ip netns exec {} cat /sys/class/net/br0/statistics/rx_packets", bridge.name()));
  unsigned char broadcast[60] = {
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
      0,    0x0a, 0x63, 0,    5,    0x88, 0xb5};  // local experimental ethertype
  REQUIRE(::write(taps[0].get(), broadcast, sizeof broadcast) == sizeof broadcast);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string after = output_of(
      fmt::format("ip netns exec {} cat /sys/class/net/br0/statistics/rx_packets", bridge.name()));
  CHECK(std::stoul(after) == std::stoul(before) + 1);

  // Plumbed again while the first tap is held (a VM boot tried again): the kernel names
  // another tap, and the redirects are the new one's.
  {
    shim::PodNetwork again;
    std::vector<shim::UniqueFd> more;
    shim::Status replumbed = shim::plumb_pod_network(pod.path(), &again, &more);
    INFO(replumbed.message());
    CHECK(replumbed.ok());
    CHECK(again.interfaces.size() == 1);
    filters = output_of(fmt::format("tc -n {} filter show dev eth0 ingress", pod.name()));
    CHECK(filters.find("Egress Redirect to device vmtap1") != std::string::npos);
    CHECK(filters.find("vmtap0") == std::string::npos);
  }

  // Undone (the VM gone): the netns's own stack gets eth0's packets again.
  taps.clear();
  REQUIRE(shim::unplumb_pod_network(pod.path(), network).ok());
  CHECK(output_of(fmt::format("tc -n {} filter show dev eth0 ingress", pod.name())).empty());
  CHECK(shim::unplumb_pod_network("/var/run/netns/libshim-none", network).ok());

  // A guest whose NIC has the interface's MAC (under another name) gets the pod's view.
  REQUIRE(
      run(fmt::format("ip -n {0} link add ens3 address {1} type veth peer name peer0 && "
                      "ip -n {0} link set peer0 up",
                      guest.name(), mac)));
  shim::Status configured;
  REQUIRE(in_netns(guest.path(), [&] { configured = shim::configure_pod_network(network); }));
  INFO(configured.message());
  REQUIRE(configured.ok());
  std::string addresses = output_of(fmt::format("ip -n {} -o addr show", guest.name()));
  CHECK(addresses.find("eth0    inet 10.99.0.5/24") != std::string::npos);
  CHECK(addresses.find("lo    inet 127.0.0.1/8") != std::string::npos);
  CHECK(output_of(fmt::format("ip -n {} link show eth0", guest.name())).find("mtu 1400") !=
        std::string::npos);
  std::string routes = output_of(fmt::format("ip -n {} route show", guest.name()));
  INFO(routes);
  CHECK(routes.find("default via 10.99.0.1 dev eth0") != std::string::npos);
  CHECK(routes.find("10.98.0.0/16 via 10.99.0.2 dev eth0 metric 7") != std::string::npos);
  CHECK(routes.find("10.97.0.0/16 via 10.96.0.1 dev eth0 onlink") != std::string::npos);
  CHECK(
      output_of(fmt::format("ip -n {} -o addr show eth0", guest.name())).find("brd 10.99.0.255") !=
      std::string::npos);

  // A NIC that is not there is named.
  shim::PodNetwork missing{.interfaces = {{.name = "eth1", .mac = "02:00:00:00:00:99"}}};
  REQUIRE(in_netns(guest.path(), [&] { configured = shim::configure_pod_network(missing); }));
  CHECK(configured.code() == shim::Code::kNotFound);
  CHECK(configured.message().find("02:00:00:00:00:99") != std::string::npos);
}

TEST_CASE("pod network: guest NICs whose names the pod's interfaces swap", "[linux][pod-network]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root for network namespaces");
  Netns guest("swap");
  if (!guest.ok()) LIBSHIM_SKIP("ip netns add failed");
  // The guest probed the NICs in another order than the pod's interfaces were made.
  REQUIRE(
      run(fmt::format("ip -n {0} link add eth0 address 02:00:00:00:00:0a type veth peer name "
                      "p0 && ip -n {0} link add eth1 address 02:00:00:00:00:0b type veth peer "
                      "name p1",
                      guest.name())));
  // eth0 with an IPv6 address that a route names as its source: usable at once (the
  // pod's netns did the duplicate address detection).
  shim::PodNetwork network{
      .interfaces = {{.name = "eth0", .mac = "02:00:00:00:00:0b", .addresses = {"fd00::5/64"}},
                     {.name = "eth1", .mac = "02:00:00:00:00:0a"}},
      .routes = {{.destination = "fd01::/64",
                  .gateway = "fd00::1",
                  .interface = "eth0",
                  .source = "fd00::5"}}};
  shim::Status configured;
  REQUIRE(in_netns(guest.path(), [&] { configured = shim::configure_pod_network(network); }));
  INFO(configured.message());
  REQUIRE(configured.ok());
  CHECK(output_of(fmt::format("ip -n {} link show eth0", guest.name()))
            .find("link/ether 02:00:00:00:00:0b") != std::string::npos);
  CHECK(output_of(fmt::format("ip -n {} link show eth1", guest.name()))
            .find("link/ether 02:00:00:00:00:0a") != std::string::npos);
  CHECK(output_of(fmt::format("ip -n {} -6 route show", guest.name()))
            .find("fd01::/64 via fd00::1 dev eth0 src fd00::5") != std::string::npos);
}

TEST_CASE("pod network: two interfaces with one MAC are refused", "[linux][pod-network]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root for network namespaces");
  Netns pod("podmac");
  if (!pod.ok()) LIBSHIM_SKIP("ip netns add failed");
  REQUIRE(
      run(fmt::format("ip -n {0} link add a0 address 02:00:00:00:00:01 type veth peer name b0 && "
                      "ip -n {0} link add a1 address 02:00:00:00:00:01 type veth peer name b1 && "
                      "ip -n {0} link set a0 up && ip -n {0} link set a1 up",
                      pod.name())));
  shim::PodNetwork network;
  std::vector<shim::UniqueFd> taps;
  shim::Status s = shim::plumb_pod_network(pod.path(), &network, &taps);
  CHECK(s.code() == shim::Code::kFailedPrecondition);
  CHECK(s.message().find("a0 and a1 share the MAC 02:00:00:00:00:01") != std::string::npos);
  CHECK(taps.empty());
}

TEST_CASE("pod network: a namespace that is not there is named", "[linux][pod-network]") {
  shim::PodNetwork network;
  std::vector<shim::UniqueFd> taps;
  shim::Status s = shim::plumb_pod_network("/var/run/netns/libshim-none", &network, &taps);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("/var/run/netns/libshim-none") != std::string::npos);
}
