// read_cgroup_pids lists what `runc ps --format json` lists (runc's GetAllPids in
// libcontainer/cgroups/utils.go): the cgroup's cgroup.procs, then every sub-cgroup's,
// depth first in name order; nothing for a cgroup that is gone (a stopped container's).
// A scratch directory stands in for cgroupfs.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "shim/linux/cgroup.h"
#include "support/temp_dir.h"

namespace {

void write_procs(const std::string& dir, const std::string& text) {
  std::filesystem::create_directories(dir);
  REQUIRE(shim::go_write_file(dir + "/cgroup.procs", text, 0644).ok());
}

}  // namespace

TEST_CASE("cgroup pids: the cgroup, then its sub-cgroups depth first in name order", "[cgroup]") {
  shim::test::TempDir dir("cgroup-pids-");
  const std::string root = dir.sub("c1");
  write_procs(root, "10\n11\n");
  write_procs(root + "/b", "30\n");
  write_procs(root + "/a", "20\n");
  write_procs(root + "/a/deep", "21\n");
  std::filesystem::create_directories(root + "/empty");  // no cgroup.procs: an error, as Go
  shim::CgroupPaths v2;
  v2.version = shim::CgroupVersion::kV2;
  v2.unified = root;
  std::vector<std::uint32_t> pids = {99};
  shim::Status status = shim::read_cgroup_pids(v2, &pids);
  CHECK(status.code() == shim::Code::kNotFound);  // open .../empty/cgroup.procs

  std::filesystem::remove(root + "/empty");
  REQUIRE(shim::read_cgroup_pids(v2, &pids).ok());
  CHECK(pids == std::vector<std::uint32_t>{10, 11, 20, 21, 30});

  // v1: the pids controller's directory is walked.
  shim::CgroupPaths v1;
  v1.controllers = {{"pids", root}, {"memory", dir.sub("elsewhere")}};
  REQUIRE(shim::read_cgroup_pids(v1, &pids).ok());
  CHECK(pids == std::vector<std::uint32_t>{10, 11, 20, 21, 30});

  // Gone (runc deleted it after the container stopped): no pids, no error.
  std::filesystem::remove_all(root);
  pids = {99};
  REQUIRE(shim::read_cgroup_pids(v2, &pids).ok());
  CHECK(pids.empty());

  CHECK(shim::read_cgroup_pids(shim::CgroupPaths{}, &pids).code() == shim::Code::kNotFound);
}
