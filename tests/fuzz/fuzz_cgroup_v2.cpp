// The cgroup v2 files as the Stats RPC reads them (collect_v2_metrics, the v3 library's
// Manager.Stat semantics), the controller enabling done at init Start
// (enable_v2_controllers) and the v2 load of /proc/<pid>/cgroup, from a scratch tree
// the input fills (fake_cgroup.h):
//   pod/ctr/<file>   the container's cgroup (cpu.stat, memory.stat, io.stat, *.pressure...)
//   pod/<file>, root/<file>   its ancestors (cgroup.controllers, cgroup.subtree_control)
//   proc/1/cgroup  hugepages/<dir names>
// Checked: a failure is Unknown; the Any packs the v2 Metrics.
// libprotobuf never logs (string fields stay UTF-8).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fake_cgroup.h"
#include "fuzz_check.h"
#include "protobuf_log.h"
#include "linux/cgroup_metrics.h"
#include "shim/linux/cgroup.h"

namespace {

fuzz::FakeCgroupTree& tree() {
  static fuzz::FakeCgroupTree instance({"root", "root/pod", "root/pod/ctr", "proc", "proc/1"});
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
  shim::CgroupFs fs{fake.path("root"), fake.path("proc"), fake.path("hugepages")};
  shim::CgroupPaths paths;
  paths.version = shim::CgroupVersion::kV2;
  paths.unified = fake.path("root/pod/ctr");

  shim::cgroups_v2::Metrics metrics;
  shim::Status status = shim::collect_v2_metrics(fs, paths, &metrics);
  if (!status.ok()) FUZZ_CHECK(status.code() == shim::Code::kUnknown);
  shim::pb::Any any;
  shim::Status packed = shim::collect_metrics_any(fs, &paths, &any);
  FUZZ_CHECK(packed.code() == status.code());
  if (packed.ok()) {
    FUZZ_CHECK(any.type_url() == shim::kCgroupsV2MetricsType);
    FUZZ_CHECK(any.value() == metrics.SerializeAsString());
  }

  std::vector<std::uint32_t> pids;
  (void)shim::read_cgroup_pids(paths, &pids);
  (void)shim::enable_v2_controllers(fs, paths);

  shim::CgroupPaths loaded;
  if (shim::load_cgroup(fs, shim::CgroupVersion::kV2, 1, &loaded).ok()) {
    FUZZ_CHECK(loaded.version == shim::CgroupVersion::kV2);
  }
  fake.clear();
  return 0;
}
