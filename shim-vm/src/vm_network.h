// The pod's network in its VM: the pod's network namespace (CNI's) gets a tap beside each
// of its interfaces (shim/linux/pod_network.h), qemu a virtio-net NIC on each tap with
// the interface's MAC, and the agent the interfaces' addresses and routes (SetupNetwork).
// A pod without a network namespace of its own (`ctr run` makes an empty one; a host
// network pod has none) gets no NIC.
//
// Threading: plumb_vm_network() blocks (the pool); the rest is pure.
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/linux/pod_network.h"
#include "shim/status.h"
#include "shim/unique_fd.h"
#include "shim/vm/agent.pb.h"

namespace shim_vm {

struct VmNetwork {
  shim::PodNetwork network;
  std::vector<shim::UniqueFd> taps;  // one per network.interfaces, for qemu
};

// The path of the spec's network namespace (linux.namespaces); "" without one, and why
// in *why_none (the host's network; a new empty one, as `ctr run` makes).
std::string netns_of_spec(const boost::json::object& spec, std::string* why_none);

// Plumbs the namespace at `netns_path` for the VM.
shim::Status plumb_vm_network(const std::string& netns_path, VmNetwork* out);

// qemu's arguments for a NIC per interface, on the taps the child has as fds
// `first_fd`, `first_fd + 1`, ...
std::vector<std::string> qemu_nic_args(const shim::PodNetwork& network, int first_fd);

// The agent's request for `network`.
libshim::vm::agent::v1::SetupNetworkRequest setup_network_request(const shim::PodNetwork& network);

// What the state dir keeps of a plumbed network: the netns path, then each interface's
// name, one a line; unplumb_recorded() undoes the plumbing from it.
std::string network_record(const std::string& netns_path, const shim::PodNetwork& network);
shim::Status unplumb_recorded(const std::string& record);

// "eth0 10.88.0.5/16 aa:bb:..; ..." for the log.
std::string describe(const shim::PodNetwork& network);

}  // namespace shim_vm
