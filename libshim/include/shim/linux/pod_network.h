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
  std::string destination;  // "10.88.0.0/16"; "0.0.0.0/0" or "::/0" for a default route
  std::string gateway;      // "" for a route on the link
  std::string interface;    // a PodInterface's name
};

// What the pod's netns holds, for its VM.
struct PodNetwork {
  std::vector<PodInterface> interfaces;  // with a MAC, not loopback
  // Without the kernel's own routes for the addresses (the guest's kernel makes those).
  std::vector<PodRoute> routes;

  // Whether there is no interface (no NIC to give the VM).
  bool empty() const { return interfaces.empty(); }
};

// Reads the interfaces with a MAC (not loopback) of the network namespace `netns_path`
// and their addresses and routes into `network`, and makes a tap device for each
// (`taps[i]` for `network->interfaces[i]`: its fd, for the VM's NIC; the tap goes when the
// last copy of it closes). An empty network (no such interface) is no error.
Status plumb_pod_network(const std::string& netns_path, PodNetwork* network,
                         std::vector<UniqueFd>* taps);

// In the calling thread's network namespace (a guest's): brings `lo` up, then each
// interface of `network`, found by its MAC, gets its name, MTU and addresses and goes up;
// then the routes, those on a link first. NotFound naming a MAC no interface has.
Status configure_pod_network(const PodNetwork& network);

}  // namespace shim
