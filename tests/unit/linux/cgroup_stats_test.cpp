// cgroup loading and metrics: /proc/<pid>/cgroup parsing, v1/v2 collectors against fake
// cgroupfs trees in a temp dir, the Go library's parse and error semantics, and the wire
// bytes of the Metrics messages (field numbers checked by decoding them by hand).
#include <sys/stat.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/linux/cgroup.h"
#include "linux/cgroup_metrics.h"
#include "linux/cgroup_file.h"
#include "gocompat/go_compat.h"
#include "cgroup_test_helpers.h"
#include "support/temp_dir.h"

namespace {

using namespace cgroup_test;
using shim::CgroupFs;
using shim::CgroupPaths;
using shim::CgroupVersion;
namespace v1 = shim::cgroups_v1;
namespace v2 = shim::cgroups_v2;

// A fake v1 host: <tmp>/cgroup/<controller>/ctr for one container, /proc files,
// hugepages.
struct FakeV1 {
  shim::test::TempDir tmp{"cg1-"};
  CgroupFs fs{tmp.sub("cgroup"), tmp.sub("proc"), tmp.sub("hugepages")};
  CgroupPaths paths;

  std::string dir(const std::string& controller) { return fs.root + "/" + controller + "/ctr"; }

  FakeV1() {
    paths.version = CgroupVersion::kV1;
    for (const char* controller : {"memory", "cpu", "cpuacct", "pids", "blkio", "hugetlb", "rdma"}) {
      make_dirs(dir(controller));
      paths.controllers[controller] = dir(controller);
    }
    write(fs.proc + "/partitions",
          "major minor  #blocks  name\n\n 254        0  268435456 vda\n   7        0     1024 loop0\n");
    make_dirs(fs.hugepages + "/hugepages-2048kB");
    make_dirs(fs.hugepages + "/hugepages-1048576kB");
  }

  void write_memory(bool with_swap = true) {
    std::string m = dir("memory");
    write(m + "/memory.stat",
          "cache 4096\nrss 8192\nrss_huge 0\nmapped_file 12\ndirty 13\nwriteback 14\n"
          "pgpgin 70\npgpgout 80\npgfault 90\npgmajfault 100\ninactive_anon 110\n"
          "active_anon 120\ninactive_file 130\nactive_file 140\nunevictable 150\n"
          "hierarchical_memory_limit 8388608\nhierarchical_memsw_limit 16777216\n"
          "total_cache 180\ntotal_rss 190\ntotal_pgpgin 240\ntotal_unevictable 320\n"
          "swap 0\n");
    write(m + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 1\noom_kill 3\n");
    write(m + "/memory.usage_in_bytes", "1000\n");
    write(m + "/memory.max_usage_in_bytes", "2000\n");
    write(m + "/memory.failcnt", "3\n");
    write(m + "/memory.limit_in_bytes", "9223372036854771712\n");
    if (with_swap) {
      write(m + "/memory.memsw.usage_in_bytes", "1100\n");
      write(m + "/memory.memsw.max_usage_in_bytes", "2100\n");
      write(m + "/memory.memsw.failcnt", "4\n");
      write(m + "/memory.memsw.limit_in_bytes", "-1\n");  // negative reads as 0
    }
    write(m + "/memory.kmem.usage_in_bytes", "500\n");
    write(m + "/memory.kmem.max_usage_in_bytes", "600\n");
    write(m + "/memory.kmem.failcnt", "0\n");
    write(m + "/memory.kmem.limit_in_bytes", "700\n");
    write(m + "/memory.kmem.tcp.usage_in_bytes", "50\n");
    write(m + "/memory.kmem.tcp.max_usage_in_bytes", "60\n");
    write(m + "/memory.kmem.tcp.failcnt", "1\n");
    write(m + "/memory.kmem.tcp.limit_in_bytes", "70\n");
  }

  void write_all() {
    write_memory();
    write(dir("cpuacct") + "/cpuacct.stat", "user 150\nsystem 25\n");
    write(dir("cpuacct") + "/cpuacct.usage", "123456789\n");
    write(dir("cpuacct") + "/cpuacct.usage_percpu", "100 200 300 \n");
    write(dir("cpu") + "/cpu.stat", "nr_periods 10\nnr_throttled 2\nthrottled_time 3000\n");
    write(dir("pids") + "/pids.current", "7\n");
    write(dir("pids") + "/pids.max", "max\n");
    write(dir("blkio") + "/blkio.throttle.io_serviced",
          "254:0 Read 10\n254:0 Write 20\n254:0 Total 30\n7:0 Read 1\nTotal 31\n");
    write(dir("blkio") + "/blkio.throttle.io_service_bytes", "254:0 Read 4096\nTotal 4096\n");
    std::string h = dir("hugetlb");
    for (const char* size : {"2MB", "1GB"}) {
      std::string prefix = h + "/hugetlb." + size + ".";
      bool big = std::string(size) == "1GB";
      write(prefix + "usage_in_bytes", big ? "0\n" : "2097152\n");
      write(prefix + "max_usage_in_bytes", big ? "0\n" : "4194304\n");
      write(prefix + "failcnt", big ? "0\n" : "5\n");
    }
    write(dir("rdma") + "/rdma.current", "mlx4_0 hca_handle=2 hca_object=2000\n");
    write(dir("rdma") + "/rdma.max", "mlx4_0 hca_handle=max hca_object=4000\n");
  }
};

}  // namespace

TEST_CASE("parse_proc_cgroup splits controllers, named hierarchies and the unified path",
          "[cgroup]") {
  shim::ProcCgroup parsed;
  REQUIRE(shim::parse_proc_cgroup("9:name=systemd:/sys\n4:memory:/m\n2:cpu,cpuacct:/c\n0::/u\n",
                                       &parsed)
              .ok());
  CHECK(parsed.controllers.size() == 4);
  CHECK(parsed.controllers.at("name=systemd") == "/sys");
  CHECK(parsed.controllers.at("memory") == "/m");
  CHECK(parsed.controllers.at("cpu") == "/c");
  CHECK(parsed.controllers.at("cpuacct") == "/c");
  CHECK(parsed.has_unified);
  CHECK(parsed.unified == "/u");

  REQUIRE(shim::parse_proc_cgroup("0::/only/unified\n", &parsed).ok());
  CHECK(parsed.controllers.empty());
  CHECK(parsed.unified == "/only/unified");

  shim::Status bad = shim::parse_proc_cgroup("4:memory:/m\ngarbage\n", &parsed);
  CHECK(bad.code() == shim::Code::kUnknown);
  CHECK(bad.message() == "invalid cgroup entry: \"garbage\"");
}

TEST_CASE("cgroup file parsing follows the Go library", "[cgroup]") {
  std::uint64_t value = 99;
  CHECK(shim::parse_uint_lenient("18446744073709551615", &value).ok());
  CHECK(value == std::numeric_limits<std::uint64_t>::max());
  CHECK(shim::parse_uint_lenient("-1", &value).ok());
  CHECK(value == 0);
  value = 99;
  CHECK(shim::parse_uint_lenient("-99999999999999999999999", &value).ok());
  CHECK(value == 0);
  CHECK(shim::parse_uint_lenient("-0", &value).message() ==
        "strconv.ParseUint: parsing \"-0\": invalid syntax");
  CHECK(shim::parse_uint_strict("18446744073709551616", &value).message() ==
        "strconv.ParseUint: parsing \"18446744073709551616\": value out of range");
  CHECK(shim::parse_uint_strict("-1", &value).message() ==
        "strconv.ParseUint: parsing \"-1\": invalid syntax");

  std::string key;
  CHECK(shim::parse_kv("a 1 2", &key, &value).message() ==
        "cgroups: parsing file with invalid format failed");
  REQUIRE(shim::parse_kv("  rss\t42 ", &key, &value).ok());
  CHECK(key == "rss");
  CHECK(value == 42);

  shim::test::TempDir tmp("hp-");
  for (const char* name : {"hugepages-2048kB", "hugepages-1048576kB", "hugepages-64kB",
                           "hugepages-1536kB", "not-a-size"})
    make_dirs(tmp.sub(name));
  CHECK(shim::hugepage_sizes_v1(tmp.path()) ==
        std::vector<std::string>{"1GB", "1.5MB", "2MB", "64KB"});
  CHECK(shim::hugepage_sizes_v2(tmp.path()) ==
        std::vector<std::string>{"1GB", "1MB", "2MB", "64KB"});
  CHECK(shim::hugepage_sizes_v1(tmp.sub("missing")).empty());
}

TEST_CASE("load_cgroup finds v1 controller directories and the v2 path", "[cgroup]") {
  shim::test::TempDir tmp("cgl-");
  CgroupFs fs{tmp.sub("cgroup"), tmp.sub("proc"), tmp.sub("hugepages")};
  write(fs.proc + "/42/cgroup",
        "9:name=systemd:/ctr\n8:pids:/ctr\n7:blkio:/ctr\n4:memory:/outer/ctr\n"
        "2:cpu,cpuacct:/ctr\n0::/k8s/ctr\n");
  // memory is mounted from /outer (as inside a cgroup namespace or a nested container).
  write(fs.proc + "/self/mountinfo",
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "35 31 0:32 /outer /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n");
  for (const char* dir : {"systemd/ctr", "pids/ctr", "memory/ctr", "cpu/ctr", "cpuacct/ctr"})
    make_dirs(fs.root + "/" + dir);  // no blkio/ctr: left out

  CgroupPaths paths;
  REQUIRE(shim::load_cgroup(fs, CgroupVersion::kV1, 42, &paths).ok());
  CHECK(paths.version == CgroupVersion::kV1);
  CHECK(paths.controllers.size() == 5);
  CHECK(paths.dir("memory") == fs.root + "/memory/ctr");
  CHECK(paths.dir("cpuacct") == fs.root + "/cpuacct/ctr");
  CHECK(paths.dir("name=systemd") == fs.root + "/systemd/ctr");
  CHECK(paths.dir("blkio").empty());

  REQUIRE(shim::load_cgroup(fs, CgroupVersion::kV2, 42, &paths).ok());
  CHECK(paths.version == CgroupVersion::kV2);
  CHECK(paths.unified == fs.root + "/k8s/ctr");
  CHECK(paths.dir("memory") == paths.unified);

  shim::Status gone = shim::load_cgroup(fs, CgroupVersion::kV1, 43, &paths);
  CHECK(gone.code() == shim::Code::kNotFound);
  CHECK(gone.message().starts_with("parse cgroup file " + fs.proc + "/43/cgroup: open "));

  write(fs.proc + "/44/cgroup", "4:memory:/deleted\n");
  shim::Status deleted = shim::load_cgroup(fs, CgroupVersion::kV1, 44, &paths);
  CHECK(deleted == shim::Status(shim::Code::kNotFound, "cgroups: cgroup deleted"));
  CHECK(shim::load_cgroup(fs, CgroupVersion::kV2, 44, &paths).message() ==
        "cgroup path not found");
}

TEST_CASE("host_cgroup_version is v2 only on a cgroup2 mount", "[cgroup]") {
  shim::test::TempDir tmp("cgv-");
  CHECK(shim::host_cgroup_version(tmp.path()) == CgroupVersion::kV1);
  // A hybrid host's /sys/fs/cgroup/unified is cgroup2, /sys/fs/cgroup is not.
  struct stat st {};
  if (::stat("/sys/fs/cgroup/unified/cgroup.controllers", &st) == 0) {
    CHECK(shim::host_cgroup_version("/sys/fs/cgroup/unified") == CgroupVersion::kV2);
    CHECK(shim::host_cgroup_version("/sys/fs/cgroup") == CgroupVersion::kV1);
  }
}

TEST_CASE("collect_v1_metrics reads every v1 controller file", "[cgroup]") {
  FakeV1 host;
  host.write_all();
  v1::Metrics m;
  REQUIRE(shim::collect_v1_metrics(host.fs, host.paths, &m).ok());

  const v1::MemoryStat& mem = m.memory();
  CHECK(mem.cache() == 4096);
  CHECK(mem.rss() == 8192);
  CHECK(mem.pg_pg_in() == 70);
  CHECK(mem.pg_maj_fault() == 100);
  CHECK(mem.unevictable() == 150);
  CHECK(mem.hierarchical_memory_limit() == 8388608);
  CHECK(mem.hierarchical_swap_limit() == 16777216);
  CHECK(mem.total_pg_pg_in() == 240);
  CHECK(mem.total_unevictable() == 320);
  CHECK(mem.usage().usage() == 1000);
  CHECK(mem.usage().max() == 2000);
  CHECK(mem.usage().failcnt() == 3);
  CHECK(mem.usage().limit() == 9223372036854771712ull);
  CHECK(mem.swap().usage() == 1100);
  CHECK(mem.swap().limit() == 0);
  CHECK(mem.kernel().limit() == 700);
  CHECK(mem.kernel_tcp().max() == 60);
  CHECK(m.memory_oom_control().under_oom() == 1);
  CHECK(m.memory_oom_control().oom_kill() == 3);

  CHECK(m.cpu().usage().total() == 123456789);
  CHECK(m.cpu().usage().user() == 1500000000);  // 150 ticks of 10 ms
  CHECK(m.cpu().usage().kernel() == 250000000);
  CHECK(std::vector<std::uint64_t>(m.cpu().usage().per_cpu().begin(),
                                   m.cpu().usage().per_cpu().end()) ==
        std::vector<std::uint64_t>{100, 200, 300});
  CHECK(m.cpu().throttling().periods() == 10);
  CHECK(m.cpu().throttling().throttled_periods() == 2);
  CHECK(m.cpu().throttling().throttled_time() == 3000);

  CHECK(m.pids().current() == 7);
  CHECK(m.pids().limit() == 0);  // "max"

  // No CFQ files: the throttle files fill serviced and service_bytes.
  REQUIRE(m.blkio().io_serviced_recursive_size() == 4);
  const v1::BlkIOEntry& first = m.blkio().io_serviced_recursive(0);
  CHECK(first.device() == "/dev/vda");
  CHECK(first.major() == 254);
  CHECK(first.minor() == 0);
  CHECK(first.op() == "Read");
  CHECK(first.value() == 10);
  CHECK(m.blkio().io_serviced_recursive(3).device() == "/dev/loop0");
  REQUIRE(m.blkio().io_service_bytes_recursive_size() == 1);
  CHECK(m.blkio().io_service_bytes_recursive(0).value() == 4096);
  CHECK(m.blkio().sectors_recursive_size() == 0);

  REQUIRE(m.hugetlb_size() == 2);
  CHECK(m.hugetlb(0).pagesize() == "1GB");
  CHECK(m.hugetlb(1).pagesize() == "2MB");
  CHECK(m.hugetlb(1).usage() == 2097152);
  CHECK(m.hugetlb(1).max() == 4194304);
  CHECK(m.hugetlb(1).failcnt() == 5);

  REQUIRE(m.rdma().current_size() == 1);
  CHECK(m.rdma().current(0).device() == "mlx4_0");
  CHECK(m.rdma().current(0).hca_handles() == 2);
  CHECK(m.rdma().current(0).hca_objects() == 2000);
  CHECK(m.rdma().limit(0).hca_handles() == 0xffffffffu);
}

TEST_CASE("collect_v1_metrics ignores missing files the way IgnoreNotExist does", "[cgroup]") {
  FakeV1 host;
  SECTION("no swap accounting: memsw missing stops the entries, no error") {
    host.write_memory(false);
    v1::Metrics m;
    REQUIRE(shim::collect_v1_metrics(host.fs, host.paths, &m).ok());
    CHECK(m.memory().usage().usage() == 1000);
    CHECK(m.memory().has_swap());
    CHECK(m.memory().swap().usage() == 0);
    CHECK(m.memory().kernel().usage() == 0);  // never read: the library stops at memsw
    CHECK(m.memory().cache() == 4096);
  }
  SECTION("a cgroup removed after loading gives the bare skeleton") {
    v1::Metrics m;
    CgroupPaths gone = host.paths;
    for (auto& [name, dir] : gone.controllers) dir += "/gone";
    REQUIRE(shim::collect_v1_metrics(host.fs, gone, &m).ok());
    CHECK(m.has_cpu());
    CHECK(m.cpu().has_usage());
    CHECK(m.cpu().has_throttling());
    CHECK_FALSE(m.has_memory());
    CHECK_FALSE(m.has_pids());
    CHECK(m.has_blkio());  // created before the first read, as in Go
    CHECK(m.blkio().io_serviced_recursive_size() == 0);
    CHECK(m.hugetlb_size() == 0);
  }
  SECTION("a malformed file fails the call with the Go text") {
    host.write_all();
    write(host.dir("memory") + "/memory.stat", "cache 1\nbroken line here\n");
    v1::Metrics m;
    shim::Status status = shim::collect_v1_metrics(host.fs, host.paths, &m);
    CHECK(status == shim::unknown("1: cgroups: parsing file with invalid format failed"));

    write(host.dir("memory") + "/memory.stat", "cache 1\n");
    write(host.dir("cpuacct") + "/cpuacct.stat", "user 1\n");
    status = shim::collect_v1_metrics(host.fs, host.paths, &m);
    CHECK(status.message() == "\"" + host.dir("cpuacct") + "/cpuacct.stat\" is expected to have 4 fields");
  }
}

TEST_CASE("v1 Metrics bytes carry containerd's field numbers", "[cgroup]") {
  FakeV1 host;
  host.write_all();
  shim::pb::Any any;
  REQUIRE(shim::collect_metrics_any(host.fs, &host.paths, &any).ok());
  CHECK(any.type_url() == "io.containerd.cgroups.v1.Metrics");

  std::vector<WireField> top = decode(any.value());
  CHECK(field(top, 1).type == 2);  // hugetlb (repeated)
  std::vector<WireField> pids = decode(field(top, 2).bytes);
  CHECK(field(pids, 1).varint == 7);  // current
  std::vector<WireField> cpu = decode(field(top, 3).bytes);
  std::vector<WireField> usage = decode(field(cpu, 1).bytes);
  CHECK(field(usage, 1).varint == 123456789);  // total
  CHECK(field(usage, 3).varint == 1500000000);  // user
  CHECK(field(usage, 4).type == 2);             // per_cpu, packed
  std::vector<WireField> memory = decode(field(top, 4).bytes);
  CHECK(field(memory, 1).varint == 4096);   // cache
  CHECK(field(memory, 7).varint == 70);     // pg_pg_in
  CHECK(field(memory, 17).varint == 16777216);  // hierarchical_swap_limit
  std::vector<WireField> usage_entry = decode(field(memory, 33).bytes);
  CHECK(field(usage_entry, 2).varint == 1000);  // usage
  CHECK(field(usage_entry, 3).varint == 2000);  // max
  CHECK(field(decode(field(memory, 36).bytes), 1).varint == 70);  // kernel_tcp.limit
  std::vector<WireField> blkio = decode(field(top, 5).bytes);
  std::vector<WireField> entry = decode(field(blkio, 2).bytes);  // io_serviced_recursive
  CHECK(field(entry, 1).bytes == "Read");
  CHECK(field(entry, 2).bytes == "/dev/vda");
  CHECK(field(entry, 3).varint == 254);
  CHECK(field(entry, 5).varint == 10);
  std::vector<WireField> rdma = decode(field(top, 6).bytes);
  CHECK(field(decode(field(rdma, 1).bytes), 3).varint == 2000);
  std::vector<WireField> oom = decode(field(top, 9).bytes);
  CHECK(field(oom, 2).varint == 1);  // under_oom
  CHECK(field(oom, 3).varint == 3);  // oom_kill

  v1::Metrics back;
  REQUIRE(back.ParseFromString(any.value()));
  CHECK(back.SerializeAsString() == any.value());
  CHECK(back.memory().kernel().usage() == 500);
}

TEST_CASE("collect_metrics_any without a cgroup is the Go shim's NotFound", "[cgroup]") {
  shim::pb::Any any;
  shim::Status status = shim::collect_metrics_any(CgroupFs{}, nullptr, &any);
  CHECK(status == shim::Status(shim::Code::kNotFound, "cgroup does not exist: not found"));
}
