// The cgroup migration warmer (linux/cgroup_warmer.h): which cgroup.procs it writes to.
#include <catch2/catch.hpp>

#include "linux/cgroup_warmer.h"
#include "support/temp_dir.h"

TEST_CASE("cgroup warmer: its own cgroup.procs, v1 and none", "[cgroup-warmer]") {
  shim::test::TempDir root("warm-");  // no cgroup2 mount: read as v1
  const std::string v1 =
      "12:pids:/libshim/shim\n"
      "11:memory:/libshim/mem\n"
      "4:cpu,cpuacct:/libshim/cpu\n"
      "1:name=systemd:/s\n"
      "0::/unified\n";
  CHECK(shim::CgroupMigrationWarmer::own_procs_file(v1, root.path()) ==
        root.path() + "/pids/libshim/shim/cgroup.procs");
  CHECK(shim::CgroupMigrationWarmer::own_procs_file("4:cpu,cpuacct:/c\n", root.path()) ==
        root.path() + "/cpu/c/cgroup.procs");
  CHECK(shim::CgroupMigrationWarmer::own_procs_file("1:name=systemd:/s\n", root.path()).empty());
  CHECK(shim::CgroupMigrationWarmer::own_procs_file("garbage", root.path()).empty());
}
