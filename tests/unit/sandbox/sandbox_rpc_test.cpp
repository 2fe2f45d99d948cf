// The sandbox service's RPCs one by one (sandbox/sandbox_service.h): what each answers,
// the state strings CRI maps, the errors and their texts, the info JSON.
#include <chrono>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "sandbox/host_platform.h"
#include "shim/timestamp.h"
#include "unit/sandbox/scripted_sandbox.h"

namespace {

using namespace std::chrono_literals;
using shim::Code;
using shim::test::parsed;
using shim::test::Pod;
namespace sandbox_api = containerd::runtime::sandbox::v1;

std::chrono::system_clock::time_point time_of(const shim::pb::Timestamp& ts) {
  return std::chrono::system_clock::time_point(std::chrono::seconds(ts.seconds()) +
                                               std::chrono::nanoseconds(ts.nanos()));
}

// Within the last minute: "now" as the service saw it.
bool recent(const shim::pb::Timestamp& ts) {
  auto age = std::chrono::system_clock::now() - time_of(ts);
  return age >= 0s && age < 60s;
}

}  // namespace

TEST_CASE("sandbox service: CreateSandbox hands the request to SandboxRuntime::create",
          "[sandbox]") {
  Pod pod;
  sandbox_api::CreateSandboxRequest request;
  request.set_sandbox_id("sb1");
  request.set_bundle_path("/run/containerd/io.containerd.runtime.v2.task/k8s.io/sb1");
  request.set_netns_path("/var/run/netns/cni-1");
  request.add_rootfs()->set_type("overlay");
  request.mutable_options()->set_type_url("runtime.v1.PodSandboxConfig");
  request.mutable_options()->set_value("config bytes");
  (*request.mutable_annotations())["io.kubernetes.cri.sandbox-name"] = "web";
  REQUIRE(pod.call<sandbox_api::CreateSandboxResponse>("CreateSandbox", request).status.ok());

  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1"});
  std::lock_guard lock(pod.script.mu);
  REQUIRE(pod.script.config.has_value());
  const shim::SandboxConfig& config = *pod.script.config;
  CHECK(config.id == "sb1");
  CHECK(config.bundle == "/run/containerd/io.containerd.runtime.v2.task/k8s.io/sb1");
  CHECK(config.netns_path == "/var/run/netns/cni-1");
  REQUIRE(config.rootfs.size() == 1);
  CHECK(config.rootfs[0].type() == "overlay");
  REQUIRE(config.options.has_value());
  CHECK(config.options->type_url() == "runtime.v1.PodSandboxConfig");
  CHECK(config.options->value() == "config bytes");
  CHECK(config.annotations ==
        std::map<std::string, std::string>{{"io.kubernetes.cri.sandbox-name", "web"}});
}

TEST_CASE("sandbox service: one sandbox per shim", "[sandbox]") {
  Pod pod;
  REQUIRE(pod.create("sb1").status.ok());
  auto again = pod.create("sb1");
  CHECK(again.status.code() == Code::kAlreadyExists);
  CHECK(again.status.message() == "sandbox sb1: already exists");
  auto other = pod.create("sb2");
  CHECK(other.status.code() == Code::kFailedPrecondition);
  CHECK(other.status.message() ==
        "cannot create sandbox sb2: this shim serves sandbox sb1 (one sandbox per shim): "
        "failed precondition");
  auto empty = pod.create("");
  CHECK(empty.status.code() == Code::kInvalidArgument);
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1"});
}

TEST_CASE("sandbox service: an id the shim does not serve is NotFound in every other call",
          "[sandbox]") {
  Pod pod;
  auto check_not_found = [&](const shim::test::CallResult& result, const std::string& method) {
    INFO(method);
    CHECK(result.status.code() == Code::kNotFound);
    CHECK(result.status.message() == "sandbox nope: not found");
  };
  for (bool with_sandbox : {false, true}) {
    if (with_sandbox) REQUIRE(pod.create("sb1").status.ok());
    check_not_found(pod.start("nope"), "StartSandbox");
    check_not_found(pod.stop("nope"), "StopSandbox");
    check_not_found(pod.ping("nope"), "PingSandbox");
    sandbox_api::SandboxStatusRequest status;
    status.set_sandbox_id("nope");
    check_not_found(pod.call<sandbox_api::SandboxStatusResponse>("SandboxStatus", status),
                    "SandboxStatus");
    sandbox_api::PlatformRequest platform;
    platform.set_sandbox_id("nope");
    check_not_found(pod.call<sandbox_api::PlatformResponse>("Platform", platform), "Platform");
    sandbox_api::SandboxMetricsRequest metrics;
    metrics.set_sandbox_id("nope");
    check_not_found(pod.call<sandbox_api::SandboxMetricsResponse>("SandboxMetrics", metrics),
                    "SandboxMetrics");
    check_not_found(pod.wait_async("nope").get(), "WaitSandbox");
  }
  // ShutdownSandbox of another id while a sandbox lives here: NotFound, the sandbox stays.
  check_not_found(pod.shutdown("nope"), "ShutdownSandbox");
  CHECK(pod.ping("sb1").status.ok());
  CHECK(pod.shutdown_control.requests == 0);
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1"});
}

TEST_CASE("sandbox service: StartSandbox answers pid, created_at and spec, the sandbox is READY",
          "[sandbox]") {
  Pod pod;
  pod.script.pid = 777;
  shim::pb::Any spec;
  spec.set_type_url("types.containerd.io/opencontainers/runtime-spec/1/Spec");
  spec.set_value("{}");
  pod.script.spec = spec;
  REQUIRE(pod.create("sb1").status.ok());

  auto created = pod.status("sb1");
  CHECK(created.sandbox_id() == "sb1");
  CHECK(created.state() == "SANDBOX_NOTREADY");
  CHECK(created.pid() == 0);
  CHECK_FALSE(created.has_created_at());  // CRI falls back to its own record
  CHECK(created.exited_at().seconds() == shim::kGoZeroTimeSeconds);

  sandbox_api::StartSandboxResponse started;
  REQUIRE(pod.start("sb1", &started).status.ok());
  CHECK(started.pid() == 777);
  CHECK(recent(started.created_at()));
  CHECK(started.spec().type_url() == spec.type_url());
  CHECK(started.spec().value() == "{}");

  auto ready = pod.status("sb1");
  CHECK(ready.sandbox_id() == "sb1");
  CHECK(ready.state() == "SANDBOX_READY");
  CHECK(ready.pid() == 777);
  CHECK(ready.created_at().seconds() == started.created_at().seconds());
  CHECK(ready.created_at().nanos() == started.created_at().nanos());
  CHECK(ready.exited_at().seconds() == shim::kGoZeroTimeSeconds);
  CHECK(ready.exited_at().nanos() == 0);
  CHECK(ready.info().empty());  // not verbose

  auto twice = pod.start("sb1");
  CHECK(twice.status.code() == Code::kFailedPrecondition);
  CHECK(twice.status.message() == "sandbox sb1 already started: failed precondition");
  CHECK(pod.ping("sb1").status.ok());
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1", "start"});
}

TEST_CASE("sandbox service: SandboxStatus verbose answers info JSON with the sandbox's details",
          "[sandbox]") {
  Pod pod;
  pod.script.pid = 31;
  pod.script.details = {{"vmm", "qemu"}, {"vcpus", 2}, {"pid", "not a number"}};
  sandbox_api::CreateSandboxRequest create;
  create.set_sandbox_id("sb1");
  create.set_bundle_path("/b/sb1");
  create.set_netns_path("/var/run/netns/n1");
  REQUIRE(pod.call<sandbox_api::CreateSandboxResponse>("CreateSandbox", create).status.ok());
  REQUIRE(pod.start("sb1").status.ok());

  auto status = pod.status("sb1", true);
  CHECK(status.state() == "SANDBOX_READY");
  REQUIRE(status.info().contains("info"));
  boost::system::error_code ec;
  boost::json::value info = boost::json::parse(status.info().at("info"), ec);
  INFO(status.info().at("info"));
  REQUIRE_FALSE(ec);
  REQUIRE(info.is_object());
  const auto& fields = info.as_object();
  CHECK(fields.at("id").as_string() == "sb1");
  CHECK(fields.at("pid").to_number<std::int64_t>() ==
        31);  // libshim's member wins: CRI decodes pid as a number
  CHECK(fields.at("state").as_string() == "SANDBOX_READY");
  CHECK(fields.at("bundle").as_string() == "/b/sb1");
  CHECK(fields.at("netnsPath").as_string() == "/var/run/netns/n1");
  CHECK(fields.at("createdAt").is_string());
  CHECK(fields.at("startedAt").is_string());
  CHECK_FALSE(fields.contains("exitedAt"));
  CHECK(fields.at("vmm").as_string() == "qemu");
  CHECK(fields.at("vcpus").to_number<std::int64_t>() == 2);

  REQUIRE(pod.stop("sb1").status.ok());
  auto stopped = pod.status("sb1", true);
  boost::json::value after = boost::json::parse(stopped.info().at("info"), ec);
  REQUIRE_FALSE(ec);
  CHECK(after.at("state").as_string() == "SANDBOX_NOTREADY");
  CHECK(after.at("exitStatus").to_number<std::int64_t>() == 0);
  CHECK(after.at("exitedAt").is_string());
  CHECK(pod.script.recorded() ==
        std::vector<std::string>{"create sb1", "start", "details", "stop 0", "details"});
}

TEST_CASE("sandbox service: SandboxStatus answers at once while a vendor call is under way",
          "[sandbox]") {
  Pod pod;
  REQUIRE(pod.create("sb1").status.ok());
  pod.script.hold("start");
  sandbox_api::StartSandboxRequest start;
  start.set_sandbox_id("sb1");
  auto starting = pod.call_async("StartSandbox", start);
  REQUIRE(pod.script.wait_until_held("start"));
  // Not verbose: from the loop, not behind the start (CRI: before every container create).
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
  CHECK(pod.ping("sb1").status.ok());
  // Stop queues behind the start: one vendor call at a time.
  sandbox_api::StopSandboxRequest stop;
  stop.set_sandbox_id("sb1");
  auto stopping = pod.call_async("StopSandbox", stop);
  CHECK(stopping.wait_for(100ms) == std::future_status::timeout);
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1", "start"});
  pod.script.release("start");
  REQUIRE(starting.get().status.ok());
  REQUIRE(stopping.get().status.ok());
  CHECK(pod.script.recorded() == std::vector<std::string>{"create sb1", "start", "stop 0"});
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
}

TEST_CASE("sandbox service: Platform defaults to this host's, as Go names it", "[sandbox]") {
  Pod pod;
  REQUIRE(pod.create("sb1").status.ok());
  sandbox_api::PlatformRequest request;
  request.set_sandbox_id("sb1");
  auto platform = parsed<sandbox_api::PlatformResponse>(
      pod.call<sandbox_api::PlatformResponse>("Platform", request));
  CHECK(platform.platform().os() == "linux");
  CHECK(platform.platform().architecture() == shim::go_architecture(shim::host_machine()));
  if (shim::host_machine() == "x86_64") CHECK(platform.platform().architecture() == "amd64");
  if (shim::host_machine() == "aarch64") CHECK(platform.platform().architecture() == "arm64");

  pod.script.platform_implemented = true;
  auto own = parsed<sandbox_api::PlatformResponse>(
      pod.call<sandbox_api::PlatformResponse>("Platform", request));
  CHECK(own.platform().os() == "plan9");
  CHECK(own.platform().architecture() == "mips");
}

TEST_CASE("sandbox service: SandboxMetrics fills id and timestamp, the default is Unimplemented",
          "[sandbox]") {
  Pod pod;
  REQUIRE(pod.create("sb1").status.ok());
  REQUIRE(pod.start("sb1").status.ok());
  sandbox_api::SandboxMetricsRequest request;
  request.set_sandbox_id("sb1");
  auto unimplemented = pod.call<sandbox_api::SandboxMetricsResponse>("SandboxMetrics", request);
  CHECK(unimplemented.status.code() == Code::kUnimplemented);
  CHECK(unimplemented.status.message() == "sandbox metrics: not implemented");

  pod.script.metrics_implemented = true;
  auto filled = parsed<sandbox_api::SandboxMetricsResponse>(
      pod.call<sandbox_api::SandboxMetricsResponse>("SandboxMetrics", request));
  CHECK(filled.metrics().id() == "sb1");
  CHECK(recent(filled.metrics().timestamp()));
  CHECK(filled.metrics().data().type_url() == "io.containerd.cgroups.v2.Metrics");
  CHECK(filled.metrics().data().value() == "scripted");

  pod.script.metrics_id = "vm-7";  // the plug-in's own id stays
  auto own = parsed<sandbox_api::SandboxMetricsResponse>(
      pod.call<sandbox_api::SandboxMetricsResponse>("SandboxMetrics", request));
  CHECK(own.metrics().id() == "vm-7");
}

TEST_CASE("sandbox service: a failing vendor Status is answered as it is, the state unchanged",
          "[sandbox]") {
  Pod pod;
  pod.script.fails["create"] = shim::Status(Code::kResourceExhausted, "no memory for the VM");
  auto refused = pod.create("sb1");
  CHECK(refused.status.code() == Code::kResourceExhausted);
  CHECK(refused.status.message() == "no memory for the VM");
  // A failed create leaves no sandbox: the id is free, and it can be created again.
  CHECK(pod.ping("sb1").status.code() == Code::kNotFound);
  pod.script.fails.clear();
  REQUIRE(pod.create("sb1").status.ok());

  pod.script.fails["start"] = shim::Status(Code::kUnavailable, "vm did not boot");
  auto failed = pod.start("sb1");
  CHECK(failed.status.code() == Code::kUnavailable);
  CHECK(failed.status.message() == "vm did not boot");
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
  pod.script.fails.clear();
  REQUIRE(pod.start("sb1").status.ok());

  pod.script.fails["stop"] = shim::Status(Code::kDeadlineExceeded, "vm did not stop");
  auto not_stopped = pod.stop("sb1", 5);
  CHECK(not_stopped.status.code() == Code::kDeadlineExceeded);
  CHECK(not_stopped.status.message() == "vm did not stop");
  CHECK(pod.status("sb1").state() == "SANDBOX_READY");
  pod.script.fails.clear();
  REQUIRE(pod.stop("sb1", 5).status.ok());
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
  CHECK(pod.script.recorded() ==
        std::vector<std::string>{"create sb1", "create sb1", "start", "start", "stop 5", "stop 5"});
}
