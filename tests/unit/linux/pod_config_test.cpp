// The pure parts of the pauseless pod (shim/linux/pod_sandbox.h): what a PodSandboxConfig
// asks (pod_plan), which sysctls a pod may set and where they go (pod_sysctls), and where
// its cgroup is (pod_cgroup).
#include <sys/stat.h>

#include <string>

#include <catch2/catch.hpp>

#include "linux/pod_plan.h"
#include "linux/pod_sysctls.h"
#include "shim/fs.h"
#include "shim/linux/pod_cgroup.h"
#include "shim/pb/cgroups/v1_metrics.pb.h"
#include "support/temp_dir.h"

namespace {

using shim::linux_pod::PodPlan;

shim::SandboxConfig config_with(const shim::cri::PodSandboxConfig& pod, std::string netns = "") {
  shim::SandboxConfig config;
  config.id = "pod-1";
  config.bundle = "/nonexistent";
  config.netns_path = std::move(netns);
  shim::pb::Any any;
  any.set_type_url("type.googleapis.com/runtime.v1.PodSandboxConfig");
  any.set_value(pod.SerializeAsString());
  config.options = any;
  return config;
}

shim::cri::NamespaceOption* namespaces(shim::cri::PodSandboxConfig* pod) {
  return pod->mutable_linux()->mutable_security_context()->mutable_namespace_options();
}

}  // namespace

TEST_CASE("pod plan: a default pod has every namespace of its own but pid", "[pod_sandbox]") {
  shim::cri::PodSandboxConfig pod;
  pod.set_hostname("web-0");
  pod.mutable_linux()->set_cgroup_parent("/kubepods/podx");
  (*pod.mutable_linux()->mutable_sysctls())["net.ipv4.ip_forward"] = "1";
  namespaces(&pod)->set_pid(shim::cri::CONTAINER);
  PodPlan plan;
  REQUIRE(shim::linux_pod::make_pod_plan(config_with(pod, "/var/run/netns/cni-1"), &plan).ok());
  CHECK(plan.id == "pod-1");
  CHECK(plan.netns_path == "/var/run/netns/cni-1");
  CHECK(plan.own_network);
  CHECK(plan.own_ipc);
  CHECK(plan.own_uts);
  CHECK_FALSE(plan.shared_pid);
  CHECK(plan.hostname == "web-0");
  CHECK(plan.cgroup_parent == "/kubepods/podx");
  CHECK(plan.sysctls == std::map<std::string, std::string>{{"net.ipv4.ip_forward", "1"}});
}

TEST_CASE("pod plan: host network and host IPC keep the host's net, uts and ipc", "[pod_sandbox]") {
  shim::cri::PodSandboxConfig pod;
  namespaces(&pod)->set_network(shim::cri::NODE);
  namespaces(&pod)->set_ipc(shim::cri::NODE);
  namespaces(&pod)->set_pid(shim::cri::POD);
  PodPlan plan;
  // A netns path with NODE is not entered: the mode decides.
  REQUIRE(shim::linux_pod::make_pod_plan(config_with(pod, "/var/run/netns/x"), &plan).ok());
  CHECK_FALSE(plan.own_network);
  CHECK(plan.netns_path.empty());
  CHECK_FALSE(plan.own_uts);
  CHECK_FALSE(plan.own_ipc);
  CHECK(plan.shared_pid);
}

TEST_CASE("pod plan: refusals", "[pod_sandbox]") {
  PodPlan plan;
  SECTION("a user-namespace pod is FailedPrecondition") {
    shim::cri::PodSandboxConfig pod;
    namespaces(&pod)->mutable_userns_options()->set_mode(shim::cri::POD);
    shim::Status s = shim::linux_pod::make_pod_plan(config_with(pod), &plan);
    CHECK(s.code() == shim::Code::kFailedPrecondition);
    CHECK(s.message().find("user-namespace pods") != std::string::npos);
  }
  SECTION("a host-userns pod is fine") {
    shim::cri::PodSandboxConfig pod;
    namespaces(&pod)->mutable_userns_options()->set_mode(shim::cri::NODE);
    CHECK(shim::linux_pod::make_pod_plan(config_with(pod), &plan).ok());
  }
  SECTION("undecodable options are InvalidArgument") {
    shim::SandboxConfig config = config_with({});
    config.options->set_value("\xff\xff\xff");
    shim::Status s = shim::linux_pod::make_pod_plan(config, &plan);
    CHECK(s.code() == shim::Code::kInvalidArgument);
    CHECK(s.message() ==
          "sandbox pod-1: options (type.googleapis.com/runtime.v1.PodSandboxConfig) are not a "
          "PodSandboxConfig");
  }
  SECTION("a host sysctl is InvalidArgument naming it") {
    shim::cri::PodSandboxConfig pod;
    (*pod.mutable_linux()->mutable_sysctls())["kernel.pid_max"] = "100";
    shim::Status s = shim::linux_pod::make_pod_plan(config_with(pod), &plan);
    CHECK(s.code() == shim::Code::kInvalidArgument);
    CHECK(s.message().starts_with("sandbox pod-1: sysctl \"kernel.pid_max\": not a namespaced"));
  }
  SECTION("no options: a pod of its own namespaces") {
    shim::SandboxConfig config = config_with({});
    config.options.reset();
    REQUIRE(shim::linux_pod::make_pod_plan(config, &plan).ok());
    CHECK(plan.own_network);
    CHECK(plan.shared_pid);  // POD is the enum's zero
  }
}

TEST_CASE("pod sysctls: keys map to /proc/sys files", "[pod_sandbox]") {
  std::string file;
  REQUIRE(shim::linux_pod::sysctl_file("net.ipv4.ip_forward", &file).ok());
  CHECK(file == "net/ipv4/ip_forward");
  REQUIRE(shim::linux_pod::sysctl_file("net.ipv4.conf.eth0/100.forwarding", &file).ok());
  CHECK(file == "net/ipv4/conf/eth0.100/forwarding");
  REQUIRE(shim::linux_pod::sysctl_file("net.ipv4.//x", &file).ok());
  CHECK(file == "net/ipv4/..x");  // a name, not the parent: "..x" climbs nowhere
  REQUIRE(shim::linux_pod::sysctl_file("kernel.shmmax", &file).ok());
  CHECK(file == "kernel/shmmax");
  for (const char* bad : {"", "net..x", ".net", "net.", "net.ipv4./"}) {
    INFO(bad);
    CHECK(shim::linux_pod::sysctl_file(bad, &file).code() == shim::Code::kInvalidArgument);
  }
}

TEST_CASE("pod sysctls: only namespaced ones, and only with the namespace", "[pod_sandbox]") {
  using shim::linux_pod::check_sysctl;
  for (const char* ok :
       {"net.core.somaxconn", "kernel.shmmax", "kernel.shmall", "kernel.shm_rmid_forced",
        "kernel.msgmax", "kernel.sem", "fs.mqueue.msg_max"}) {
    INFO(ok);
    CHECK(check_sysctl(ok, true, true).ok());
  }
  for (const char* bad : {"kernel.pid_max", "vm.swappiness", "kernel.hostname", "kernel.semx",
                          "fs.file-max", "netx.a"}) {
    INFO(bad);
    CHECK(check_sysctl(bad, true, true).code() == shim::Code::kInvalidArgument);
  }
  shim::Status host_net = check_sysctl("net.core.somaxconn", false, true);
  CHECK(host_net.message() ==
        "sysctl \"net.core.somaxconn\": not allowed in the host's network namespace "
        "(hostNetwork pod)");
  CHECK(check_sysctl("kernel.shmmax", true, false).code() == shim::Code::kInvalidArgument);
  CHECK(check_sysctl("kernel.shmmax", false, true).ok());
}

TEST_CASE("pod sysctls: written under proc_sys, errors name key and file", "[pod_sandbox]") {
  shim::test::TempDir dir("pod-sysctl-");
  REQUIRE(shim::make_dirs(dir.sub("net/ipv4"), 0755).ok());
  REQUIRE(shim::write_file(dir.sub("net/ipv4/ip_forward"), "0", 0644).ok());
  REQUIRE(shim::linux_pod::write_sysctls(dir.path(), {{"net.ipv4.ip_forward", "1"}}).ok());
  std::string content;
  REQUIRE(shim::read_file(dir.sub("net/ipv4/ip_forward"), &content).ok());
  CHECK(content == "1");
  shim::Status missing = shim::linux_pod::write_sysctls(dir.path(), {{"net.core.nothing", "1"}});
  CHECK_FALSE(missing.ok());
  CHECK(missing.message().starts_with("set sysctl net.core.nothing=1: "));
  CHECK(missing.message().find(dir.sub("net/core/nothing")) != std::string::npos);
}

TEST_CASE("pod cgroup: cgroup parents expand as runc's systemd driver does", "[pod_sandbox]") {
  using shim::expand_cgroup_parent;
  std::string path;
  REQUIRE(expand_cgroup_parent("kubepods-besteffort-pod1234.slice", &path).ok());
  CHECK(path == "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234.slice");
  REQUIRE(expand_cgroup_parent("kubepods.slice", &path).ok());
  CHECK(path == "/kubepods.slice");
  REQUIRE(expand_cgroup_parent("-.slice", &path).ok());
  CHECK(path == "/");
  REQUIRE(expand_cgroup_parent("/kubepods/besteffort/pod1234", &path).ok());
  CHECK(path == "/kubepods/besteffort/pod1234");
  REQUIRE(expand_cgroup_parent("kubepods/burstable/", &path).ok());
  CHECK(path == "/kubepods/burstable");
  CHECK(expand_cgroup_parent("a--b.slice", &path).code() == shim::Code::kInvalidArgument);
  CHECK(expand_cgroup_parent("-a.slice", &path).code() == shim::Code::kInvalidArgument);
  CHECK(expand_cgroup_parent("a-.slice", &path).code() == shim::Code::kInvalidArgument);
}

TEST_CASE("pod cgroup: directories and metrics of the pod's cgroup", "[pod_sandbox]") {
  shim::test::TempDir dir("pod-cg-");
  shim::CgroupFs fs;
  fs.root = dir.path();
  REQUIRE(shim::make_dirs(dir.sub("memory/kubepods/pod1"), 0755).ok());
  REQUIRE(shim::make_dirs(dir.sub("pids/kubepods/pod1"), 0755).ok());
  REQUIRE(shim::write_file(dir.sub("pids/kubepods/pod1/pids.current"), "7\n", 0644).ok());
  REQUIRE(shim::write_file(dir.sub("pids/kubepods/pod1/pids.max"), "max\n", 0644).ok());
  shim::CgroupPaths paths;
  REQUIRE(shim::pod_cgroup_paths(fs, shim::CgroupVersion::kV1, "/kubepods/pod1", &paths).ok());
  CHECK(paths.controllers ==
        std::map<std::string, std::string>{{"memory", dir.sub("memory/kubepods/pod1")},
                                           {"pids", dir.sub("pids/kubepods/pod1")}});
  shim::Status gone =
      shim::pod_cgroup_paths(fs, shim::CgroupVersion::kV1, "/kubepods/pod2", &paths);
  CHECK(gone.code() == shim::Code::kNotFound);
  REQUIRE(shim::pod_cgroup_paths(fs, shim::CgroupVersion::kV2, "/pids/kubepods/pod1", &paths).ok());
  CHECK(paths.unified == dir.sub("pids/kubepods/pod1"));

  shim::pb::Any data;
  shim::Status none = shim::pod_cgroup_metrics(fs, "", &data);
  CHECK(none.code() == shim::Code::kNotFound);
  CHECK(none.message() ==
        "pod metrics: the pod has no cgroup parent (linux.cgroup_parent): not found");
  shim::Status missing = shim::pod_cgroup_metrics(fs, "/kubepods/pod2", &data);
  CHECK(missing.code() == shim::Code::kNotFound);
  CHECK(missing.message().starts_with("pod metrics: pod cgroup /kubepods/pod2"));
  // The temp dir is no cgroup2 mount: v1 metrics, with the pids controller's numbers.
  REQUIRE(shim::pod_cgroup_metrics(fs, "/kubepods/pod1", &data).ok());
  CHECK(data.type_url() == "io.containerd.cgroups.v1.Metrics");
  io::containerd::cgroups::v1::Metrics metrics;
  REQUIRE(metrics.ParseFromString(data.value()));
  CHECK(metrics.pids().current() == 7);
}
