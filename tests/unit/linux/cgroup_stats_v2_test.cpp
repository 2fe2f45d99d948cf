// cgroup v2 metrics against a fake unified tree in a temp dir (this host is v1): the
// files the v3 library reads, its defaults for missing/malformed files, the wire bytes,
// and the controller enabling the Go shim does at Start.
#include <cstdint>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "cgroup_test_helpers.h"
#include "shim/linux/cgroup.h"
#include "linux/cgroup_metrics.h"
#include "gocompat/go_compat.h"
#include "support/temp_dir.h"

namespace {

using namespace cgroup_test;
using shim::CgroupFs;
using shim::CgroupPaths;
using shim::CgroupVersion;
namespace v2 = shim::cgroups_v2;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

struct FakeV2 {
  shim::test::TempDir tmp{"cg2-"};
  CgroupFs fs{tmp.sub("cgroup"), tmp.sub("proc"), tmp.sub("hugepages")};
  CgroupPaths paths;
  std::string dir = fs.root + "/pod/ctr";

  FakeV2() {
    paths.version = CgroupVersion::kV2;
    paths.unified = dir;
    make_dirs(dir);
    make_dirs(fs.hugepages + "/hugepages-2048kB");
  }

  void write_all() {
    write(dir + "/pids.current", "3\n");
    write(dir + "/pids.max", "max\n");
    write(dir + "/cpu.stat",
          "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 5\nnr_throttled 1\n"
          "throttled_usec 20\nnr_bursts 2\nburst_usec 30\n");
    write(dir + "/cpu.pressure",
          "some avg10=1.50 avg60=0.25 avg300=0.00 total=12345\n"
          "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n");
    write(dir + "/memory.stat",
          "anon 4096\nfile 8192\nkernel_stack 16\nslab 32\nsock 0\nshmem 0\nfile_mapped 64\n"
          "inactive_file 128\nactive_file 256\npgfault 1000\npgmajfault 2\n"
          "workingset_refault_anon 3\nworkingset_refault_file 4\nworkingset_activate_anon 5\n"
          "workingset_activate_file 6\nthp_fault_alloc 7\n");
    write(dir + "/memory.current", "12288\n");
    write(dir + "/memory.max", "max\n");
    write(dir + "/memory.peak", "20000\n");
    write(dir + "/memory.swap.current", "0\n");
    write(dir + "/memory.swap.max", "1048576\n");
    write(dir + "/memory.events", "low 0\nhigh 1\nmax 2\noom 3\noom_kill 4\noom_group_kill 0\n");
    write(dir + "/io.stat",
          "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
          "7:0 rbytes=1 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n");
    write(dir + "/hugetlb.2MB.current", "2097152\n");
    write(dir + "/hugetlb.2MB.max", "max\n");
    write(dir + "/hugetlb.2MB.events", "max 9\n");
    write(dir + "/rdma.current", "mlx4_0 hca_handle=1 hca_object=10\n");
    write(dir + "/rdma.max", "mlx4_0 hca_handle=max hca_object=max\n");
  }
};

}  // namespace

TEST_CASE("collect_v2_metrics reads the unified cgroup files", "[cgroup]") {
  FakeV2 host;
  host.write_all();
  v2::Metrics m;
  REQUIRE(shim::collect_v2_metrics(host.fs, host.paths, &m).ok());

  CHECK(m.pids().current() == 3);
  CHECK(m.pids().limit() == kMax);  // v2 reads "max" as UINT64_MAX (v1: 0)

  CHECK(m.cpu().usage_usec() == 1000);
  CHECK(m.cpu().user_usec() == 600);
  CHECK(m.cpu().system_usec() == 400);
  CHECK(m.cpu().nr_throttled() == 1);
  CHECK(m.cpu().throttled_usec() == 20);
  CHECK(m.cpu().nr_bursts() == 2);
  CHECK(m.cpu().burst_usec() == 30);
  REQUIRE(m.cpu().has_psi());
  CHECK(m.cpu().psi().some().avg10() == 1.5);
  CHECK(m.cpu().psi().some().avg60() == 0.25);
  CHECK(m.cpu().psi().some().total() == 12345);
  CHECK(m.cpu().psi().full().total() == 7);

  CHECK(m.memory().anon() == 4096);
  CHECK(m.memory().file() == 8192);
  CHECK(m.memory().inactive_file() == 128);
  CHECK(m.memory().workingset_refault_anon() == 3);
  CHECK(m.memory().workingset_activate_file() == 6);
  CHECK(m.memory().thp_fault_alloc() == 7);
  CHECK(m.memory().usage() == 12288);
  CHECK(m.memory().usage_limit() == kMax);
  CHECK(m.memory().max_usage() == 20000);
  CHECK(m.memory().swap_limit() == 1048576);
  CHECK(m.memory().swap_max_usage() == 0);  // memory.swap.peak missing
  CHECK_FALSE(m.memory().has_psi());        // memory.pressure missing

  REQUIRE(m.has_memory_events());
  CHECK(m.memory_events().high() == 1);
  CHECK(m.memory_events().oom() == 3);
  CHECK(m.memory_events().oom_kill() == 4);

  REQUIRE(m.io().usage_size() == 2);
  CHECK(m.io().usage(0).major() == 254);
  CHECK(m.io().usage(0).rbytes() == 4096);
  CHECK(m.io().usage(0).wios() == 2);
  CHECK(m.io().usage(1).minor() == 0);
  CHECK_FALSE(m.io().has_psi());

  REQUIRE(m.hugetlb_size() == 1);
  CHECK(m.hugetlb(0).pagesize() == "2MB");
  CHECK(m.hugetlb(0).current() == 2097152);
  CHECK(m.hugetlb(0).max() == kMax);
  CHECK(m.hugetlb(0).failcnt() == 9);

  REQUIRE(m.rdma().limit_size() == 1);
  CHECK(m.rdma().current(0).hca_objects() == 10);
  CHECK(m.rdma().limit(0).hca_handles() == 0xffffffffu);
}

TEST_CASE("collect_v2_metrics defaults for missing and malformed files", "[cgroup]") {
  FakeV2 host;
  SECTION("an empty cgroup directory gives zeros, no memory_events") {
    v2::Metrics m;
    REQUIRE(shim::collect_v2_metrics(host.fs, host.paths, &m).ok());
    CHECK(m.has_pids());
    CHECK(m.pids().limit() == 0);
    CHECK(m.has_cpu());
    CHECK_FALSE(m.cpu().has_psi());
    CHECK(m.has_memory());
    CHECK(m.memory().usage() == 0);
    CHECK_FALSE(m.has_memory_events());
    CHECK(m.has_io());
    CHECK(m.has_rdma());
    REQUIRE(m.hugetlb_size() == 1);  // one entry per host page size, zeros
    CHECK(m.hugetlb(0).current() == 0);
  }
  SECTION("a malformed cpu.stat fails the call with the library's text") {
    write(host.dir + "/cpu.stat", "usage_usec 1\nusage_usec\n");
    v2::Metrics m;
    shim::Status status = shim::collect_v2_metrics(host.fs, host.paths, &m);
    CHECK(status == shim::unknown("error while parsing " + host.dir +
                                  "/cpu.stat (line=\"usage_usec\"): cgroups: parsing file with "
                                  "invalid format failed"));
  }
  SECTION("malformed single-value and pressure files read as 0 / no PSI") {
    write(host.dir + "/pids.current", "lots\n");
    write(host.dir + "/memory.stat", "anon 1\n");
    write(host.dir + "/memory.current", "-5\n");
    write(host.dir + "/memory.pressure", "some avg10=x avg60=0 avg300=0 total=1\n");
    v2::Metrics m;
    REQUIRE(shim::collect_v2_metrics(host.fs, host.paths, &m).ok());
    CHECK(m.pids().current() == 0);
    CHECK(m.memory().anon() == 1);
    CHECK(m.memory().usage() == 0);
    CHECK_FALSE(m.memory().has_psi());
  }
}

TEST_CASE("v2 Metrics bytes carry containerd's field numbers", "[cgroup]") {
  FakeV2 host;
  host.write_all();
  shim::pb::Any any;
  REQUIRE(shim::collect_metrics_any(host.fs, &host.paths, &any).ok());
  CHECK(any.type_url() == "io.containerd.cgroups.v2.Metrics");

  std::vector<WireField> top = decode(any.value());
  CHECK(field(decode(field(top, 1).bytes), 1).varint == 3);  // pids.current
  std::vector<WireField> cpu = decode(field(top, 2).bytes);
  CHECK(field(cpu, 1).varint == 1000);  // usage_usec
  CHECK(field(cpu, 9).varint == 30);    // burst_usec
  std::vector<WireField> some = decode(field(decode(field(cpu, 7).bytes), 1).bytes);
  CHECK(field(some, 1).type == 1);  // avg10: double
  CHECK(field(some, 4).varint == 12345);
  std::vector<WireField> memory = decode(field(top, 4).bytes);
  CHECK(field(memory, 1).varint == 4096);     // anon
  CHECK(field(memory, 13).varint == 128);     // inactive_file
  CHECK(field(memory, 32).varint == 12288);   // usage
  CHECK(field(memory, 33).varint == kMax);    // usage_limit
  CHECK(field(memory, 36).varint == 20000);   // max_usage
  CHECK(field(memory, 39).varint == 3);       // workingset_refault_anon
  CHECK(field(memory, 42).varint == 6);       // workingset_activate_file
  std::vector<WireField> io_entry = decode(field(decode(field(top, 6).bytes), 1).bytes);
  CHECK(field(io_entry, 1).varint == 254);
  CHECK(field(io_entry, 4).varint == 8192);  // wbytes
  std::vector<WireField> hugetlb = decode(field(top, 7).bytes);
  CHECK(field(hugetlb, 3).bytes == "2MB");
  CHECK(field(hugetlb, 4).varint == 9);  // failcnt
  std::vector<WireField> events = decode(field(top, 8).bytes);
  CHECK(field(events, 4).varint == 3);  // oom
  CHECK(field(events, 5).varint == 4);  // oom_kill

  v2::Metrics back;
  REQUIRE(back.ParseFromString(any.value()));
  CHECK(back.SerializeAsString() == any.value());
}

TEST_CASE("enable_v2_controllers writes every ancestor's subtree_control", "[cgroup]") {
  FakeV2 host;
  write(host.fs.root + "/cgroup.controllers", "cpuset cpu io memory pids\n");
  for (const std::string& dir : {host.fs.root, host.fs.root + "/pod", host.dir})
    write(dir + "/cgroup.subtree_control", "");
  REQUIRE(shim::enable_v2_controllers(host.fs, host.paths).ok());
  std::string text;
  const std::string expected = "+cpuset +cpu +io +memory +pids";
  REQUIRE(shim::go_read_file(host.fs.root + "/cgroup.subtree_control", &text).ok());
  CHECK(text == expected);
  REQUIRE(shim::go_read_file(host.fs.root + "/pod/cgroup.subtree_control", &text).ok());
  CHECK(text == expected);
  REQUIRE(shim::go_read_file(host.dir + "/cgroup.subtree_control", &text).ok());
  CHECK(text.empty());  // not the container's own cgroup

  CgroupPaths v1_paths;  // v1: nothing to do
  CHECK(shim::enable_v2_controllers(host.fs, v1_paths).ok());
}
