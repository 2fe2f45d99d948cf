// The cgroup v1 stat files as the Stats RPC reads them (collect_v1_metrics, containerd's
// cgroups v1 semantics) and /proc/<pid>/cgroup + mountinfo as Create loads them
// (load_cgroup), from a scratch tree the input fills (fake_cgroup.h):
//   <controller>/ctr/ for memory cpu cpuacct pids blkio rdma hugetlb: the container's
//   proc/partitions  proc/1/cgroup  proc/self/mountinfo  hugepages/<dir names>
// Checked: a failure is Unknown (missing files are not failures); the Any packs the v1
// Metrics; the pids of cgroup.procs are read without failing on bad lines; libprotobuf
// never logs (string fields stay UTF-8).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fake_cgroup.h"
#include "fuzz_check.h"
#include "protobuf_log.h"
#include "linux/cgroup_file.h"
#include "linux/cgroup_metrics.h"
#include "shim/linux/cgroup.h"

namespace {

const char* const kControllers[] = {"memory", "cpu", "cpuacct", "pids", "blkio", "rdma", "hugetlb"};

fuzz::FakeCgroupTree& tree() {
  static fuzz::FakeCgroupTree instance({"memory/ctr", "cpu/ctr", "cpuacct/ctr", "pids/ctr", "blkio/ctr",
                                        "rdma/ctr", "hugetlb/ctr", "systemd/ctr", "proc", "proc/1",
                                        "proc/self"});
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(&fuzz::abort_on_protobuf_log);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FakeCgroupTree& fake = tree();
  fake.fill(std::string_view(reinterpret_cast<const char*>(data), size));
  shim::CgroupFs fs{fake.root(), fake.path("proc"), fake.path("hugepages")};
  shim::CgroupPaths paths;
  paths.version = shim::CgroupVersion::kV1;
  for (const char* controller : kControllers) paths.controllers[controller] = fake.path(std::string(controller) + "/ctr");

  shim::cgroups_v1::Metrics metrics;
  shim::Status status = shim::collect_v1_metrics(fs, paths, &metrics);
  if (!status.ok()) FUZZ_CHECK(status.code() == shim::Code::kUnknown);
  shim::pb::Any any;
  shim::Status packed = shim::collect_metrics_any(fs, &paths, &any);
  FUZZ_CHECK(packed.code() == status.code());
  if (packed.ok()) {
    FUZZ_CHECK(any.type_url() == shim::kCgroupsV1MetricsType);
    FUZZ_CHECK(any.value() == metrics.SerializeAsString());
  }

  std::vector<std::uint32_t> pids;
  (void)shim::read_cgroup_pids(paths, &pids);

  shim::CgroupPaths loaded;
  shim::Status load = shim::load_cgroup(fs, shim::CgroupVersion::kV1, 1, &loaded);
  if (load.ok()) FUZZ_CHECK(!loaded.controllers.empty());
  fake.clear();
  return 0;
}
