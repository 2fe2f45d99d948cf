// shim-vm's host cgroup of a pod's VM (shim-vm/src/host_cgroup.h): the path from the
// booting container's spec or from the sandbox's PodSandboxConfig, and the `delete`
// action's removal of a recorded cgroup.
#include <filesystem>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "host_cgroup.h"
#include "shim/pb/cri/pod_sandbox_config.pb.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

shim::SandboxConfig sandbox_config(const std::string& parent) {
  shim::cri::PodSandboxConfig pod;
  pod.mutable_linux()->set_cgroup_parent(parent);
  shim::SandboxConfig config;
  config.id = "pod1";
  config.options.emplace();
  config.options->set_type_url("type.googleapis.com/runtime.v1.PodSandboxConfig");
  config.options->set_value(pod.SerializeAsString());
  return config;
}

}  // namespace

TEST_CASE("shim-vm: the VM's cgroup is the booting container's cgroupsPath", "[shim-vm]") {
  std::string why;
  json::object spec{{"linux", {{"cgroupsPath", "/kubepods/besteffort/pod1/abc"}}}};
  CHECK(shim_vm::vm_cgroup_of_spec(spec, &why) == "/kubepods/besteffort/pod1/abc");
  CHECK(why.empty());

  json::object systemd{{"linux", {{"cgroupsPath", "kubepods.slice:cri-containerd:abc"}}}};
  CHECK(shim_vm::vm_cgroup_of_spec(systemd, &why).empty());
  CHECK(why.find("not a cgroupfs path") != std::string::npos);

  json::object none{{"linux", json::object()}};
  CHECK(shim_vm::vm_cgroup_of_spec(none, &why).empty());
  CHECK(why == "the spec has no linux.cgroupsPath");
}

// The VM's cgroup of the pod whose options name `parent` as its cgroup parent.
static shim::Status sandbox_cgroup(const std::string& parent, std::string* path,
                                   std::string* cgroup_parent, std::string* why) {
  shim::cri::PodSandboxConfig pod;
  if (shim::Status s = shim_vm::decode_pod_config(sandbox_config(parent), &pod); !s.ok()) return s;
  return shim_vm::vm_cgroup_of_sandbox(pod, "pod1", path, cgroup_parent, why);
}

TEST_CASE("shim-vm: a sandbox's VM gets a cgroup of its own under the pod's", "[shim-vm]") {
  std::string path, parent, why;
  REQUIRE(sandbox_cgroup("/kubepods/pod1", &path, &parent, &why).ok());
  CHECK(path == "/kubepods/pod1/libshim-vm-pod1");
  CHECK(parent == "/kubepods/pod1");

  // kubelet's systemd driver names a slice: systemd's tree, where the shim makes nothing;
  // the parent still names the pod's cgroup for SandboxMetrics.
  REQUIRE(sandbox_cgroup("kubepods-besteffort-pod12.slice", &path, &parent, &why).ok());
  CHECK(path.empty());
  CHECK(parent == "kubepods-besteffort-pod12.slice");
  CHECK(why.find("systemd slice") != std::string::npos);
  // A relative cgroupfs parent is made absolute.
  REQUIRE(sandbox_cgroup("kubepods/burstable", &path, &parent, &why).ok());
  CHECK(path == "/kubepods/burstable/libshim-vm-pod1");

  REQUIRE(sandbox_cgroup("", &path, &parent, &why).ok());
  CHECK(path.empty());
  CHECK(parent.empty());
  CHECK(why == "the pod has no cgroup parent");

  shim::SandboxConfig garbage = sandbox_config("/x");
  garbage.options->set_value("\xff\xff not a message");
  shim::cri::PodSandboxConfig pod;
  shim::Status bad = shim_vm::decode_pod_config(garbage, &pod);
  CHECK(bad.code() == shim::Code::kInvalidArgument);
  CHECK(bad.message().find("not a PodSandboxConfig") != std::string::npos);
  CHECK(sandbox_cgroup("a--b.slice", &path, &parent, &why).code() == shim::Code::kInvalidArgument);
}

TEST_CASE("shim-vm: the delete action removes the recorded cgroup directories", "[shim-vm]") {
  shim::test::TempDir dir("vmcg-");
  fs::create_directories(dir.path() + "/memory/ns/pod");
  fs::create_directories(dir.path() + "/cpu/ns/pod");
  REQUIRE(
      shim_vm::remove_cgroup_dirs(dir.path() + "/memory/ns/pod\n" + dir.path() + "/cpu/ns/pod\n")
          .ok());
  CHECK_FALSE(fs::exists(dir.path() + "/memory/ns/pod"));
  CHECK_FALSE(fs::exists(dir.path() + "/cpu/ns/pod"));
  CHECK(fs::exists(dir.path() + "/memory/ns"));  // levels above stay, as with runc
  // One that cannot go (here: not empty) is the error, naming it.
  fs::create_directories(dir.path() + "/memory/ns/busy/child");
  shim::Status busy = shim_vm::remove_cgroup_dirs(dir.path() + "/memory/ns/busy\n");
  CHECK_FALSE(busy.ok());
  CHECK(busy.message().find("/memory/ns/busy") != std::string::npos);
}
