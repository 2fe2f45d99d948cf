// The task API's Update with our shim-runc under a real containerd. ctr (1.6, 1.7, 2.1)
// has no `task update`, so the tests call the shim's Update over ttrpc themselves, the
// way containerd would (CRI's UpdateContainerResources), on containers started by ctr,
// and read the result back from the container's cgroup v1 memory controller.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "shim/pb/containerd/task_v2.pb.h"
#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kResourcesType =
    "types.containerd.io/opencontainers/runtime-spec/1/LinuxResources";
constexpr const char* kMemoryRoot = "/sys/fs/cgroup/memory";

bool has_memory_cgroup_v1() {
  return ::access(fmt::format("{}/memory.limit_in_bytes", kMemoryRoot).c_str(), F_OK) == 0;
}

std::string memory_limit_json(long long bytes) {
  return fmt::format(R"({{"memory":{{"limit":{}}}}})", bytes);
}

TaskCallResult update(const RuncE2e& s, const std::string& address, const std::string& id,
                      const std::string& resources_json) {
  containerd::task::v2::UpdateTaskRequest request;
  request.set_id(id);
  request.mutable_resources()->set_type_url(kResourcesType);
  request.mutable_resources()->set_value(resources_json);
  return call_task_api(address, s.fx.ns(), "Update", request.SerializeAsString(), 10s,
                       task_service_for(s.fx.version()));
}

// The memory cgroup directory of `pid` (from /proc/<pid>/cgroup), or "" if none.
std::string memory_cgroup_dir(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/cgroup", pid));
  for (std::string line; std::getline(in, line);) {
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    if (controllers.find(",memory,") == std::string::npos) continue;
    return kMemoryRoot + line.substr(second + 1);
  }
  return "";
}

long long read_limit(const std::string& cgroup_dir) {
  std::ifstream in(cgroup_dir + "/memory.limit_in_bytes");
  long long value = -1;
  in >> value;
  return value;
}

// The kernel keeps v1 limits in whole pages, rounding down.
long long page_rounded(long long bytes) {
  const long long page = ::sysconf(_SC_PAGESIZE);
  return bytes / page * page;
}

TEST_CASE("Update sets the memory limit of a running and of a paused container",
          "[runc][update][runtime-binary][multi-version][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (!has_memory_cgroup_v1()) LIBSHIM_SKIP("no cgroup v1 memory controller on this machine");
  RuncE2e s;
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "u1", {"/bin/sleep", "600"})).ok());
  REQUIRE(s.wait_status("u1", "RUNNING", 10s));
  const std::string address = s.fx.shim_address("u1");
  const pid_t pid = s.task_pid("u1");
  REQUIRE(pid > 0);
  const std::string cgroup = memory_cgroup_dir(pid);
  INFO("cgroup " << cgroup);
  REQUIRE_FALSE(cgroup.empty());

  const long long first = (64ll << 20) + 1000;  // not a page multiple
  REQUIRE(read_limit(cgroup) != page_rounded(first));
  auto set_first = update(s, address, "u1", memory_limit_json(first));
  INFO(set_first.status.to_string());
  REQUIRE(set_first.status.ok());
  CHECK(set_first.payload.empty());  // google.protobuf.Empty
  CHECK(read_limit(cgroup) == page_rounded(first));

  // Lower again, while paused (the Go shim allows Update in created, running, paused).
  REQUIRE(s.fx.ctr_ok({"task", "pause", "u1"}).ok());
  const long long second = 48ll << 20;
  auto set_second = update(s, address, "u1", memory_limit_json(second));
  INFO(set_second.status.to_string());
  CHECK(set_second.status.ok());
  CHECK(read_limit(cgroup) == second);
  CHECK(s.task_status("u1") == "PAUSED");
  REQUIRE(s.fx.ctr_ok({"task", "resume", "u1"}).ok());
  CHECK(s.task_status("u1") == "RUNNING");

  // An Update naming another container of no concern leaves this one alone.
  auto other = update(s, address, "not-here", memory_limit_json(first));
  CHECK(other.status.code() == Code::kNotFound);
  CHECK(read_limit(cgroup) == second);

  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", "u1"}).ok());
  REQUIRE(s.wait_status("u1", "STOPPED", 10s));
  auto stopped = update(s, address, "u1", memory_limit_json(first));
  CHECK(stopped.status.code() == Code::kUnknown);
  CHECK(stopped.status.message() == "cannot update a stopped container");
  REQUIRE(s.fx.ctr_ok({"task", "rm", "u1"}).ok());
}

struct UpdateOutcome {
  Code code = Code::kOk;
  std::string message;
};

UpdateOutcome outcome(const TaskCallResult& result) {
  return UpdateOutcome{result.status.code(), std::string(result.status.message())};
}

struct UpdateObservations {
  UpdateOutcome running;  // a valid Update of a running container
  long long limit = -1;   // its memory limit afterwards
  UpdateOutcome unknown_id;
  UpdateOutcome stopped;
  UpdateOutcome malformed;  // resources that are not JSON
  UpdateOutcome empty;      // an empty resources value
};

UpdateObservations observe_updates(ShimUnderTest shim) {
  RuncE2e s(shim);
  UpdateObservations seen;
  s.fx.ctr_ok(s.run({"-d"}, "live", {"/bin/sleep", "600"}));
  s.fx.ctr_ok(s.run({"-d"}, "done", {"/bin/true"}));
  REQUIRE(s.wait_status("live", "RUNNING", 10s));
  REQUIRE(s.wait_status("done", "STOPPED", 10s));
  const std::string live = s.fx.shim_address("live");
  const long long limit = 32ll << 20;

  seen.running = outcome(update(s, live, "live", memory_limit_json(limit)));
  seen.limit = read_limit(memory_cgroup_dir(s.task_pid("live")));
  seen.unknown_id = outcome(update(s, live, "no-such-task", memory_limit_json(limit)));
  seen.stopped = outcome(update(s, s.fx.shim_address("done"), "done", memory_limit_json(limit)));
  seen.malformed = outcome(update(s, live, "live", "{\"memory\": nope}"));
  seen.empty = outcome(update(s, live, "live", ""));

  s.fx.ctr_ok({"task", "kill", "-s", "KILL", "live"});
  s.wait_status("live", "STOPPED", 10s);
  s.fx.ctr_ok({"task", "rm", "live"});
  s.fx.ctr_ok({"task", "rm", "done"});
  return seen;
}

// The Go shim that came with the containerd under test is the reference: same status
// codes and texts (2.x: over task API v3, the only one its Go shim serves).
TEST_CASE("Update results and errors match the Go shim",
          "[runc][update][runtime-binary][multi-version][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (!has_memory_cgroup_v1()) LIBSHIM_SKIP("no cgroup v1 memory controller on this machine");
  UpdateObservations ours = observe_updates(ShimUnderTest::kOurs);
  UpdateObservations go = observe_updates(ShimUnderTest::kGo);
  auto show = [](const UpdateOutcome& o) {
    return fmt::format("{} {:?}", static_cast<int>(o.code), o.message);
  };
  INFO("running: ours " << show(ours.running) << " go " << show(go.running));
  INFO("unknown id: ours " << show(ours.unknown_id) << " go " << show(go.unknown_id));
  INFO("stopped: ours " << show(ours.stopped) << " go " << show(go.stopped));
  INFO("malformed: ours " << show(ours.malformed) << " go " << show(go.malformed));
  INFO("empty: ours " << show(ours.empty) << " go " << show(go.empty));

  CHECK(go.running.code == Code::kOk);
  CHECK(ours.running.code == Code::kOk);
  CHECK(go.limit == 32ll << 20);
  CHECK(ours.limit == go.limit);

  CHECK(go.unknown_id.code == Code::kNotFound);
  CHECK(ours.unknown_id.code == go.unknown_id.code);
  CHECK(ours.unknown_id.message == go.unknown_id.message);

  CHECK(go.stopped.code == Code::kUnknown);
  CHECK(ours.stopped.code == go.stopped.code);
  CHECK(ours.stopped.message == go.stopped.message);

  CHECK(go.malformed.code == Code::kUnknown);
  CHECK(ours.malformed.code == go.malformed.code);
  CHECK(ours.malformed.message == go.malformed.message);
  CHECK(go.empty.code == Code::kUnknown);
  CHECK(ours.empty.code == go.empty.code);
  CHECK(ours.empty.message == go.empty.message);
}

}  // namespace
}  // namespace shim::test
