// ContainerCgroup on cgroup file systems laid out in a temp dir (v1 hierarchies, a v2
// unified tree), the kernel's control files made beforehand: what create, update, freeze
// and remove write, and the resources they refuse.
#include <filesystem>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "shim/fs.h"
#include "shim/linux/container_cgroup.h"
#include "support/temp_dir.h"

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

void touch(const std::string& path, const std::string& content = "") {
  fs::create_directories(fs::path(path).parent_path());
  REQUIRE(shim::write_file(path, content, 0644).ok());
}

std::string read(const std::string& path) {
  std::string text;
  REQUIRE(shim::read_file(path, &text).ok());
  return text;
}

TEST_CASE("container cgroup v1: every hierarchy, resources, freezer",
          "[cgroup][container-cgroup]") {
  shim::test::TempDir dir("cg-");
  std::string root = dir.path();
  for (const char* h : {"memory", "cpu,cpuacct", "pids", "freezer", "devices"})
    fs::create_directories(root + "/" + h);
  fs::create_directory_symlink("cpu,cpuacct", root + "/cpu");
  // What the kernel would make in the leaf: the files written below (no kernel here, so
  // the leaf exists beforehand; cpuset's copying down needs a real one: the e2e tests).
  touch(root + "/memory/ctr/c1/memory.limit_in_bytes");
  touch(root + "/cpu,cpuacct/ctr/c1/cpu.shares");
  touch(root + "/pids/ctr/c1/pids.max");
  touch(root + "/freezer/ctr/c1/freezer.state");
  touch(root + "/devices/ctr/c1/devices.deny");
  touch(root + "/devices/ctr/c1/devices.allow");

  json::object resources = json::parse(R"({
    "memory": {"limit": 1048576}, "cpu": {"shares": 512}, "pids": {"limit": 20},
    "devices": [{"allow": false, "access": "rwm"},
                {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"}]})")
                               .as_object();
  shim::ContainerCgroup cgroup;
  shim::CgroupFs cgroup_fs{root};
  shim::Status s = shim::ContainerCgroup::create(cgroup_fs, shim::CgroupVersion::kV1, "/ctr/c1",
                                                 resources, &cgroup);
  INFO(s.to_string());
  REQUIRE(s.ok());
  CHECK(read(root + "/memory/ctr/c1/memory.limit_in_bytes") == "1048576");
  CHECK(read(root + "/cpu,cpuacct/ctr/c1/cpu.shares") == "512");
  CHECK(read(root + "/pids/ctr/c1/pids.max") == "20");
  // A file takes the last write: the allow rule; the deny went first.
  CHECK(read(root + "/devices/ctr/c1/devices.deny") == "a *:* rwm");
  CHECK(read(root + "/devices/ctr/c1/devices.allow") == "c 1:3 rwm");
  CHECK(cgroup.paths().dir("cpuacct") == root + "/cpu,cpuacct/ctr/c1");
  auto procs = cgroup.procs_files();
  CHECK(std::count(procs.begin(), procs.end(), root + "/cpu,cpuacct/ctr/c1/cgroup.procs") == 1);
  CHECK(procs.size() == 5);

  REQUIRE(cgroup.freeze().ok());
  CHECK(read(root + "/freezer/ctr/c1/freezer.state") == "FROZEN");
  REQUIRE(cgroup.thaw().ok());
  CHECK(read(root + "/freezer/ctr/c1/freezer.state") == "THAWED");

  REQUIRE(cgroup.update(json::parse(R"({"pids": {"limit": 0}})").as_object()).ok());
  CHECK(read(root + "/pids/ctr/c1/pids.max") == "max");
}

TEST_CASE("container cgroup v2: one directory, v2 files and values", "[cgroup][container-cgroup]") {
  shim::test::TempDir dir("cg-");
  std::string root = dir.path();
  touch(root + "/cgroup.controllers", "cpu memory pids\n");
  touch(root + "/cgroup.subtree_control");
  for (const char* f :
       {"memory.max", "memory.low", "cpu.weight", "cpu.max", "pids.max", "cgroup.freeze"})
    touch(root + "/k8s/c2/" + std::string(f));
  touch(root + "/k8s/cgroup.subtree_control");
  touch(root + "/k8s/c2/cgroup.events", "populated 1\nfrozen 1\n");
  fs::remove(root + "/k8s/c2/cgroup.procs");
  json::object resources = json::parse(R"({
    "memory": {"limit": -1, "reservation": 4096}, "cpu": {"shares": 1024, "quota": 50000,
    "period": 100000}, "pids": {"limit": 5}})")
                               .as_object();
  shim::ContainerCgroup cgroup;
  shim::CgroupFs cgroup_fs{root};
  shim::Status s = shim::ContainerCgroup::create(cgroup_fs, shim::CgroupVersion::kV2, "/k8s/c2",
                                                 resources, &cgroup);
  INFO(s.to_string());
  REQUIRE(s.ok());
  CHECK(read(root + "/k8s/c2/memory.max") == "max");
  CHECK(read(root + "/k8s/c2/memory.low") == "4096");
  CHECK(read(root + "/k8s/c2/cpu.weight") == "39");  // runc: 1 + (1024-2)*9999/262142
  CHECK(read(root + "/k8s/c2/cpu.max") == "50000 100000");
  CHECK(read(root + "/k8s/c2/pids.max") == "5");
  CHECK(read(root + "/cgroup.subtree_control") == "+cpu +memory +pids");
  CHECK(cgroup.procs_files() == std::vector<std::string>{root + "/k8s/c2/cgroup.procs"});
  REQUIRE(cgroup.freeze().ok());
  CHECK(read(root + "/k8s/c2/cgroup.freeze") == "1");
}

TEST_CASE("container cgroup: what it cannot make or apply, and nothing is left",
          "[cgroup][container-cgroup]") {
  shim::test::TempDir dir("cg-");
  shim::ContainerCgroup cgroup;
  shim::CgroupFs cgroup_fs{dir.path()};
  shim::Status s = shim::ContainerCgroup::create(
      cgroup_fs, shim::CgroupVersion::kV2, "/a",
      json::parse(R"({"blockIO": {"weight": 10}})").as_object(), &cgroup);
  CHECK(s.code() == shim::Code::kUnimplemented);
  CHECK(s.message() == "linux.resources.blockIO: not implemented");
  s = shim::ContainerCgroup::create(cgroup_fs, shim::CgroupVersion::kV2, "system.slice:cri:x", {},
                                    &cgroup);
  CHECK(s.code() == shim::Code::kInvalidArgument);
  // A write that fails (no such control file) takes the new leaf away again.
  s = shim::ContainerCgroup::create(cgroup_fs, shim::CgroupVersion::kV2, "/b",
                                    json::parse(R"({"pids": {"limit": 3}})").as_object(), &cgroup);
  CHECK_FALSE(s.ok());
  CHECK_FALSE(fs::exists(dir.path() + "/b"));
}

}  // namespace

// Two Creates under one new parent: the one that finds the parent made by the other may
// find its cpuset.cpus and .mems still empty, and a process cannot join a cpuset below
// it (ENOSPC, seen in CI). Each existing level's empty ones take their parent's values.
TEST_CASE("container cgroup v1: cpuset levels another Create left empty are filled",
          "[cgroup][container-cgroup]") {
  shim::test::TempDir dir("cg-");
  std::string root = dir.path();
  touch(root + "/cpuset/cpuset.cpus", "0-1\n");
  touch(root + "/cpuset/cpuset.mems", "0\n");
  // The parent as the other Create made it (the kernel's empty files), not filled yet,
  // and the middle level too. The leaf exists beforehand (no kernel here to make its
  // files) with values someone set: they are kept.
  touch(root + "/cpuset/ns/cpuset.cpus", "\n");
  touch(root + "/cpuset/ns/cpuset.mems", "\n");
  touch(root + "/cpuset/ns/c1/cpuset.cpus", "\n");
  touch(root + "/cpuset/ns/c1/cpuset.mems", "\n");
  touch(root + "/cpuset/ns/c1/keep/cpuset.cpus", "1\n");
  touch(root + "/cpuset/ns/c1/keep/cpuset.mems", "7\n");
  shim::ContainerCgroup cgroup;
  shim::Status s = shim::ContainerCgroup::create(shim::CgroupFs{root}, shim::CgroupVersion::kV1,
                                                 "/ns/c1/keep", json::object(), &cgroup);
  INFO(s.to_string());
  REQUIRE(s.ok());
  CHECK(read(root + "/cpuset/ns/cpuset.cpus") == "0-1\n");
  CHECK(read(root + "/cpuset/ns/cpuset.mems") == "0\n");
  CHECK(read(root + "/cpuset/ns/c1/cpuset.cpus") == "0-1\n");
  CHECK(read(root + "/cpuset/ns/c1/cpuset.mems") == "0\n");
  CHECK(read(root + "/cpuset/ns/c1/keep/cpuset.cpus") == "1\n");
  CHECK(read(root + "/cpuset/ns/c1/keep/cpuset.mems") == "7\n");
}
