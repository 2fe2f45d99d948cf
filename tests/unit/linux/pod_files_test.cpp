// The files a pauseless pod writes for CRI (linux/pod_files.h): the same bytes as
// containerd's podsandbox controller (setupSandboxFiles, parseDNSOptions), where CRI looks
// for them, and gone after removal.
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "linux/pod_files.h"
#include "shim/fs.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "unit/isolated_child.h"

namespace {

using shim::linux_pod::ContainerdDirs;
using shim::linux_pod::PodFilePaths;

std::string read(const std::string& path) {
  std::string content;
  if (!shim::read_file(path, &content).ok()) return "<unreadable>";
  return content;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

int mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

// The mountinfo line of `target` in this process's mount namespace, "" if not a mount.
std::string mount_line(const std::string& target) {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point == target) return line;
  }
  return {};
}

// A sandbox bundle as containerd's sandbox controller makes it, under `dir`.
std::string make_bundle(const shim::test::TempDir& dir, const std::string& id) {
  std::string bundle = dir.sub("state/io.containerd.sandbox.controller.v1.shim/k8s.io/" + id);
  std::string work = dir.sub("root/io.containerd.sandbox.controller.v1.shim/k8s.io/" + id);
  REQUIRE(shim::make_dirs(bundle, 0711).ok());
  REQUIRE(shim::make_dirs(work, 0711).ok());
  REQUIRE(::symlink(work.c_str(), (bundle + "/work").c_str()) == 0);
  return bundle;
}

}  // namespace

TEST_CASE("pod files: resolv.conf from DNSConfig as parseDNSOptions", "[pod_sandbox]") {
  shim::cri::DNSConfig dns;
  CHECK(shim::linux_pod::resolv_conf_from_dns(dns).empty());
  dns.add_servers("10.96.0.10");
  CHECK(shim::linux_pod::resolv_conf_from_dns(dns) == "nameserver 10.96.0.10\n");
  dns.add_servers("8.8.8.8");
  dns.add_searches("default.svc.cluster.local");
  dns.add_searches("svc.cluster.local");
  dns.add_options("ndots:5");
  dns.add_options("edns0");
  CHECK(shim::linux_pod::resolv_conf_from_dns(dns) ==
        "search default.svc.cluster.local svc.cluster.local\n"
        "nameserver 10.96.0.10\nnameserver 8.8.8.8\n"
        "options ndots:5 edns0\n");
}

TEST_CASE("pod files: containerd's root and state from the sandbox bundle", "[pod_sandbox]") {
  shim::test::TempDir dir("pod-dirs-");
  std::string bundle = make_bundle(dir, "p1");
  ContainerdDirs dirs;
  REQUIRE(shim::linux_pod::containerd_dirs_from_bundle(bundle, &dirs).ok());
  CHECK(dirs.state == dir.sub("state"));
  CHECK(dirs.root == dir.sub("root"));
  REQUIRE(shim::linux_pod::containerd_dirs_from_bundle(bundle + "/", &dirs).ok());
  CHECK(dirs.state == dir.sub("state"));

  PodFilePaths paths = PodFilePaths::of(dirs, "p1");
  CHECK(paths.root_dir == dir.sub("root/io.containerd.grpc.v1.cri/sandboxes/p1"));
  CHECK(paths.hostname == dir.sub("root/io.containerd.grpc.v1.cri/sandboxes/p1/hostname"));
  CHECK(paths.hosts == dir.sub("root/io.containerd.grpc.v1.cri/sandboxes/p1/hosts"));
  CHECK(paths.resolv_conf == dir.sub("root/io.containerd.grpc.v1.cri/sandboxes/p1/resolv.conf"));
  CHECK(paths.shm == dir.sub("state/io.containerd.grpc.v1.cri/sandboxes/p1/shm"));

  SECTION("no work symlink") {
    REQUIRE(::unlink((bundle + "/work").c_str()) == 0);
    shim::Status s = shim::linux_pod::containerd_dirs_from_bundle(bundle, &dirs);
    CHECK(s.code() == shim::Code::kFailedPrecondition);
    CHECK(s.message() ==
          "find containerd's root dir: readlink " + bundle + "/work: No such file or directory");
  }
  SECTION("a bundle elsewhere") {
    shim::Status s = shim::linux_pod::containerd_dirs_from_bundle(dir.sub("x/y/z"), &dirs);
    CHECK(s.code() == shim::Code::kFailedPrecondition);
    CHECK(s.message() == "find containerd's state dir: bundle " + dir.sub("x/y/z") +
                             " is not <state>/io.containerd.sandbox.controller.v1.shim/<ns>/<id>");
  }
}

TEST_CASE("pod files: written as podsandbox writes them, then removed", "[pod_sandbox]") {
  shim::test::TempDir dir("pod-files-");
  ContainerdDirs dirs{dir.sub("root"), dir.sub("state")};
  PodFilePaths paths = PodFilePaths::of(dirs, "p1");
  shim::linux_pod::HostFiles host{dir.sub("etc-hosts"), dir.sub("etc-resolv")};
  REQUIRE(shim::write_file(host.hosts, "127.0.0.1 localhost\n10.0.0.1 node\n", 0600).ok());
  REQUIRE(shim::write_file(host.resolv_conf, "nameserver 1.1.1.1\n", 0600).ok());
  shim::cri::PodSandboxConfig config;
  std::vector<std::string> written;

  SECTION("no hostname, no DNS config: the host's name and resolv.conf") {
    REQUIRE(shim::linux_pod::write_pod_files(paths, config, "node-a", host, true, &written).ok());
    CHECK(read(paths.hostname) == "node-a\n");
    CHECK(read(paths.resolv_conf) == "nameserver 1.1.1.1\n");
  }
  SECTION("the pod's hostname and DNS config") {
    config.set_hostname("web-0");
    config.mutable_dns_config()->add_servers("10.96.0.10");
    REQUIRE(shim::linux_pod::write_pod_files(paths, config, "node-a", host, true, &written).ok());
    CHECK(read(paths.hostname) == "web-0\n");
    CHECK(read(paths.resolv_conf) == "nameserver 10.96.0.10\n");
  }
  SECTION("an empty DNS config gives an empty resolv.conf, as podsandbox's") {
    config.mutable_dns_config();
    REQUIRE(shim::linux_pod::write_pod_files(paths, config, "node-a", host, true, &written).ok());
    CHECK(read(paths.resolv_conf).empty());
  }
  CHECK(read(paths.hosts) == "127.0.0.1 localhost\n10.0.0.1 node\n");
  CHECK(mode_of(paths.hostname) == 0644);
  CHECK(mode_of(paths.hosts) == 0644);
  CHECK(mode_of(paths.resolv_conf) == 0644);
  CHECK(written == std::vector<std::string>{paths.hostname, paths.hosts, paths.resolv_conf});
  CHECK_FALSE(exists(paths.shm));  // host IPC: CRI gives containers the host's /dev/shm

  REQUIRE(shim::linux_pod::remove_pod_files(paths).ok());
  for (const std::string& path :
       {paths.hostname, paths.hosts, paths.resolv_conf, paths.root_dir, paths.state_dir}) {
    INFO(path);
    CHECK_FALSE(exists(path));
  }
  CHECK(shim::linux_pod::remove_pod_files(paths).ok());  // twice is fine
}

TEST_CASE("pod files: a missing host file fails with its path", "[pod_sandbox]") {
  shim::test::TempDir dir("pod-files-");
  PodFilePaths paths = PodFilePaths::of({dir.sub("root"), dir.sub("state")}, "p1");
  shim::linux_pod::HostFiles host{dir.sub("no-hosts"), dir.sub("no-resolv")};
  std::vector<std::string> written;
  shim::Status s = shim::linux_pod::write_pod_files(paths, {}, "n", host, true, &written);
  CHECK(s.code() == shim::Code::kNotFound);
  CHECK(s.message().find(dir.sub("no-hosts")) != std::string::npos);
  CHECK(written == std::vector<std::string>{paths.hostname});
}

TEST_CASE("pod files: the pod's /dev/shm is a 64 MiB tmpfs, unmounted at removal",
          "[pod_sandbox][root]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root to mount tmpfs");
  shim::test::TempDir dir("pod-shm-");
  auto outcome = shim_test::run_in_child([&](shim_test::ChildReport& report) {
    // A mount namespace of the child's own: nothing it mounts reaches the host.
    if (!report.check(::unshare(CLONE_NEWNS) == 0, "unshare mount namespace")) return;
    if (!report.check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0,
                      "make / private"))
      return;
    PodFilePaths paths = PodFilePaths::of({dir.sub("root"), dir.sub("state")}, "p1");
    shim::linux_pod::HostFiles host{"/etc/hosts", "/etc/resolv.conf"};
    std::vector<std::string> written;
    shim::Status s = shim::linux_pod::write_pod_files(paths, {}, "n", host, false, &written);
    report.check(s.ok(), "write: " + s.message());
    report.check(written.size() == 4 && written.back() == paths.shm, "shm listed as written");
    std::string line = mount_line(paths.shm);
    report.check(line.find(" - tmpfs shm ") != std::string::npos, "tmpfs named shm: " + line);
    for (const char* option : {"nosuid", "nodev", "noexec", "size=65536k"}) {
      report.check(line.find(option) != std::string::npos, std::string(option) + ": " + line);
    }
    // mountinfo leaves out tmpfs's default mode=1777: the root's mode says it.
    report.check(mode_of(paths.shm) == 01777, fmt::format("shm mode {:o}", mode_of(paths.shm)));
    s = shim::linux_pod::remove_pod_files(paths);
    report.check(s.ok(), "remove: " + s.message());
    report.check(mount_line(paths.shm).empty(), "shm unmounted");
    report.check(!exists(paths.shm) && !exists(paths.state_dir) && !exists(paths.root_dir),
                 "dirs removed");
  });
  shim_test::require_child_passed(outcome);
}
