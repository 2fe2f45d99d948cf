// The cgroup migration warmer (linux/cgroup_warmer.h): the cgroup.procs it would write
// to is one that lists the shim's pid, found as load_cgroup() finds it, or none.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "linux/cgroup_warmer.h"
#include "support/temp_dir.h"

namespace {

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("cgroup warmer: only a cgroup.procs that lists the pid", "[cgroup-warmer]") {
  shim::test::TempDir tmp("warm-");
  shim::CgroupFs fs{tmp.sub("cgroup"), tmp.sub("proc"), tmp.sub("hugepages")};
  using shim::CgroupMigrationWarmer;
  using shim::CgroupVersion;
  write(fs.proc + "/42/cgroup", "8:pids:/shim\n4:memory:/shim\n0::/k8s/shim\n");
  write(fs.proc + "/self/mountinfo",
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n");
  write(fs.root + "/pids/shim/cgroup.procs", "7\n420\n");  // 42 is not in it
  write(fs.root + "/memory/shim/cgroup.procs", "7\n42\n");
  CHECK(CgroupMigrationWarmer::member_procs_file(fs, CgroupVersion::kV1, 42) ==
        fs.root + "/memory/shim/cgroup.procs");
  write(fs.root + "/memory/shim/cgroup.procs", "7\n");  // moved away meanwhile
  CHECK(CgroupMigrationWarmer::member_procs_file(fs, CgroupVersion::kV1, 42).empty());

  write(fs.root + "/k8s/shim/cgroup.procs", "42\n");
  CHECK(CgroupMigrationWarmer::member_procs_file(fs, CgroupVersion::kV2, 42) ==
        fs.root + "/k8s/shim/cgroup.procs");
  write(fs.root + "/k8s/shim/cgroup.type", "threaded\n");  // would pull every thread in
  CHECK(CgroupMigrationWarmer::member_procs_file(fs, CgroupVersion::kV2, 42).empty());
  CHECK(CgroupMigrationWarmer::member_procs_file(fs, CgroupVersion::kV1, 43).empty());
}
