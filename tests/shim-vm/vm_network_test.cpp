// shim-vm's pod network helpers (shim-vm/src/vm_network.h): which netns a spec names, the
// NICs qemu gets, what the state dir keeps for the delete action.
#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "vm_network.h"

TEST_CASE("shim-vm: the pod's netns comes from the spec, or why there is none", "[shim-vm]") {
  std::string why;
  auto spec = [](const char* namespaces) {
    return boost::json::parse(fmt::format(R"({{"linux":{{"namespaces":{}}}}})", namespaces))
        .as_object();
  };
  CHECK(shim_vm::netns_of_spec(
            spec(R"([{"type":"pid"},{"type":"network","path":"/var/run/netns/cni-1"}])"), &why) ==
        "/var/run/netns/cni-1");
  CHECK(why.empty());
  // ctr run: a new, empty one.
  CHECK(shim_vm::netns_of_spec(spec(R"([{"type":"network"}])"), &why).empty());
  CHECK(why.find("new network namespace") != std::string::npos);
  // Host network: none.
  CHECK(shim_vm::netns_of_spec(spec(R"([{"type":"pid"}])"), &why).empty());
  CHECK(why.find("host's network") != std::string::npos);
}

TEST_CASE("shim-vm: NICs on the taps, and the record the delete action undoes", "[shim-vm]") {
  shim::PodNetwork network{.interfaces = {{.name = "eth0", .mac = "02:00:00:00:00:01"},
                                          {.name = "net1", .mac = "02:00:00:00:00:02"}}};
  CHECK(shim_vm::qemu_nic_args(network, 3) ==
        std::vector<std::string>{"-netdev", "tap,id=net0,fd=3", "-device",
                                 "virtio-net-device,netdev=net0,mac=02:00:00:00:00:01", "-netdev",
                                 "tap,id=net1,fd=4", "-device",
                                 "virtio-net-device,netdev=net1,mac=02:00:00:00:00:02"});
  std::string record = shim_vm::network_record("/var/run/netns/cni-1", network);
  CHECK(record == "/var/run/netns/cni-1\neth0\nnet1\n");
  // A netns that is gone (CRI removed it) leaves nothing to undo.
  CHECK(shim_vm::unplumb_recorded("/var/run/netns/libshim-gone\neth0\n").ok());
  CHECK(shim_vm::unplumb_recorded("").ok());
}
