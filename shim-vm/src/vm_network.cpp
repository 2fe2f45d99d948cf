#include "vm_network.h"

#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shim_vm {

namespace json = boost::json;

std::string netns_of_spec(const json::object& spec, std::string* why_none) {
  *why_none = "the spec has no network namespace: the host's network, which a VM cannot share";
  const json::value* linux_section = spec.if_contains("linux");
  if (linux_section == nullptr || !linux_section->is_object()) return {};
  const json::value* namespaces = linux_section->get_object().if_contains("namespaces");
  if (namespaces == nullptr || !namespaces->is_array()) return {};
  for (const json::value& ns : namespaces->get_array()) {
    if (!ns.is_object()) continue;
    const json::value* type = ns.get_object().if_contains("type");
    if (type == nullptr || !type->is_string() || type->get_string() != "network") continue;
    const json::value* path = ns.get_object().if_contains("path");
    if (path != nullptr && path->is_string() && !path->get_string().empty()) {
      why_none->clear();
      return std::string(path->get_string());
    }
    *why_none = "a new network namespace of its own (no CNI): the VM gets only lo";
    return {};
  }
  return {};
}

shim::Status plumb_vm_network(const std::string& netns_path, VmNetwork* out) {
  if (shim::Status s = shim::plumb_pod_network(netns_path, &out->network, &out->taps); !s.ok())
    return shim::Status(s.code(),
                        fmt::format("the pod's network in {}: {}", netns_path, s.message()));
  return {};
}

std::vector<std::string> qemu_nic_args(const shim::PodNetwork& network, int first_fd) {
  std::vector<std::string> args;
  for (std::size_t i = 0; i < network.interfaces.size(); ++i) {
    args.insert(
        args.end(),
        {"-netdev", fmt::format("tap,id=net{},fd={}", i, first_fd + static_cast<int>(i)), "-device",
         fmt::format("virtio-net-device,netdev=net{},mac={}", i, network.interfaces[i].mac)});
  }
  return args;
}

libshim::vm::agent::v1::SetupNetworkRequest setup_network_request(const shim::PodNetwork& network) {
  libshim::vm::agent::v1::SetupNetworkRequest request;
  for (const shim::PodInterface& i : network.interfaces) {
    auto* interface = request.add_interfaces();
    interface->set_name(i.name);
    interface->set_mac(i.mac);
    interface->set_mtu(i.mtu);
    for (const std::string& a : i.addresses) interface->add_addresses(a);
  }
  for (const shim::PodRoute& r : network.routes) {
    auto* route = request.add_routes();
    route->set_destination(r.destination);
    route->set_gateway(r.gateway);
    route->set_interface(r.interface);
    route->set_metric(r.metric);
    route->set_onlink(r.onlink);
    route->set_source(r.source);
  }
  return request;
}

std::string network_record(const std::string& netns_path, const shim::PodNetwork& network) {
  std::string record = netns_path + "\n";
  for (const shim::PodInterface& i : network.interfaces) record += i.name + "\n";
  return record;
}

shim::Status unplumb_recorded(const std::string& record) {
  std::istringstream lines(record);
  std::string netns_path, name;
  if (!std::getline(lines, netns_path) || netns_path.empty()) return {};
  shim::PodNetwork network;
  while (std::getline(lines, name)) {
    if (!name.empty()) network.interfaces.push_back({.name = name});
  }
  if (shim::Status s = shim::unplumb_pod_network(netns_path, network); !s.ok())
    return shim::Status(s.code(),
                        fmt::format("the pod's network in {}: {}", netns_path, s.message()));
  return {};
}

std::string describe(const shim::PodNetwork& network) {
  std::string text;
  for (const shim::PodInterface& i : network.interfaces) {
    text += fmt::format("{}{} {} mtu {} {}", text.empty() ? "" : "; ", i.name, i.mac, i.mtu,
                        fmt::join(i.addresses, ","));
  }
  for (const shim::PodRoute& r : network.routes) {
    text += fmt::format("; {} via {} dev {}", r.destination, r.gateway.empty() ? "-" : r.gateway,
                        r.interface);
  }
  for (const std::string& s : network.skipped) text += fmt::format("; not copied: {}", s);
  return text;
}

}  // namespace shim_vm
