// A pod's network handed to a VM (Kata's "tcfilter" model, kata-containers
// src/runtime/virtcontainers/network_linux.go): CNI made the pod's interfaces (a veth) in
// the pod's network namespace on the host. Beside each, plumb_pod_network() makes a tap
// device, and tc sends everything one receives out through the other; the VM gets the tap
// as its NIC with the interface's MAC, and configure_pod_network() gives that NIC, in the
// guest, the interface's name, MTU, addresses and routes. CNI's view (the pod's IP, its
// routes) stays true, and the guest owns the traffic.
//
// Threading: blocking; any thread (the netns is entered on a thread of its own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim {

// One interface of the pod (CNI's veth), as the guest's NIC is to be.
struct PodInterface {
  std::string name;                    // "eth0"
  std::string mac;                     // "aa:bb:cc:dd:ee:ff": the guest's NIC is found by it
  std::uint32_t mtu = 0;               // 0: the guest's default
  std::vector<std::string> addresses;  // "10.88.0.5/16", "fd00::5/64" (global scope only)
};

// A route of the pod's main table.
struct PodRoute {
  std::string destination;   // "10.88.0.0/16"; "0.0.0.0/0" or "::/0" for a default route
  std::string gateway;       // "" for a route on the link
  std::string interface;     // a PodInterface's name
  std::uint32_t metric = 0;  // 0: none
  bool onlink = false;       // the gateway is on the link even outside its subnet
  std::string source;        // the preferred source address; "" without one
};

// What the pod's netns holds, for its VM.
struct PodNetwork {
  std::vector<PodInterface> interfaces;  // up, with a MAC, not loopback, no tap
  // Without the kernel's own routes for the addresses (the guest's kernel makes those)
  // and routes from router advertisements (the guest's kernel takes its own).
  std::vector<PodRoute> routes;
  // What was not copied ("multipath route to 0.0.0.0/0"), for the log.
  std::vector<std::string> skipped;

  // Whether there is no interface (no NIC to give the VM).
  bool empty() const { return interfaces.empty(); }
};

// Reads the interfaces that are up and have a MAC (not loopback, no tap) of the network
// namespace `netns_path` and their addresses and routes into `network`, and makes a tap
// device for each, named by the kernel (vmtap0, vmtap1, ...: one an earlier VM of the pod
// still holds is not reused), without IPv6 of its own (`taps[i]` for
// `network->interfaces[i]`: its fd, for the VM's NIC; the tap goes when the last copy of
// it closes). An empty network (no such interface) is no error; two interfaces with one
// MAC are (FailedPrecondition: the guest tells NICs apart by MAC).
Status plumb_pod_network(const std::string& netns_path, PodNetwork* network,
                         std::vector<UniqueFd>* taps);

// Undoes plumb_pod_network() for `network` in `netns_path`: the interfaces' ingress
// redirects go (the taps went with the VM), so the netns works again without the VM.
// An interface or namespace that is gone is no error.
Status unplumb_pod_network(const std::string& netns_path, const PodNetwork& network);

// In the calling thread's network namespace (a guest's): brings `lo` up, then each
// interface of `network`, found by its MAC, gets its name, MTU and addresses and goes up;
// then the routes, those on a link first. NotFound naming a MAC no interface has. NICs
// are renamed through temporary names, so a guest `eth0` meant to be `eth1` is no
// conflict.
Status configure_pod_network(const PodNetwork& network);

}  // namespace shim
