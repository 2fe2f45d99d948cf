// A plug-in whose sandbox code throws: each vendor method in turn. The call fails with
// Internal "<Class>::<method> threw: <what>", the state is what it was, and the service
// keeps serving (shim/sandbox.h, "Exceptions").
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "unit/sandbox/scripted_sandbox.h"

namespace {

using shim::Code;
using shim::test::CallResult;
using shim::test::Pod;
namespace sandbox_api = containerd::runtime::sandbox::v1;

bool logged(Pod& pod, const std::string& method) {
  std::lock_guard lock(pod.log_mu);
  for (const auto& line : pod.log_lines) {
    if (line.find("msg=\"plug-in code threw\"") != std::string::npos &&
        line.find("method=\"" + method + "\"") != std::string::npos &&
        line.find("id=sb1") != std::string::npos) {
      return true;
    }
  }
  return false;
}

void check_thrown(Pod& pod, const CallResult& result, const std::string& method) {
  INFO(method);
  CHECK(result.status.code() == Code::kInternal);
  CHECK(result.status.message() ==
        fmt::format("{} threw: boom in {}", method, method.substr(method.find(':') + 2)));
  CHECK(logged(pod, method));
}

}  // namespace

TEST_CASE(
    "sandbox exceptions: a throwing SandboxRuntime::create fails CreateSandbox, a retry works",
    "[sandbox][plugin-exception]") {
  Pod pod;
  pod.script.throws = {"create"};
  check_thrown(pod, pod.create("sb1"), "SandboxRuntime::create");
  CHECK(pod.ping("sb1").status.code() == Code::kNotFound);
  pod.script.throws.clear();
  REQUIRE(pod.create("sb1").status.ok());
  REQUIRE(pod.start("sb1").status.ok());
}

TEST_CASE("sandbox exceptions: a throwing Sandbox method fails its call and nothing else",
          "[sandbox][plugin-exception]") {
  Pod pod;
  pod.script.metrics_implemented = true;
  REQUIRE(pod.create("sb1").status.ok());

  pod.script.throws = {"start"};
  auto start = pod.start("sb1");
  CHECK(start.status.code() == Code::kInternal);
  CHECK(start.status.message() == "Sandbox::start threw: boom in start");
  CHECK(logged(pod, "Sandbox::start"));
  CHECK(pod.status("sb1").state() == "SANDBOX_NOTREADY");
  pod.script.throws.clear();
  REQUIRE(pod.start("sb1").status.ok());

  pod.script.throws = {"platform", "metrics", "details"};
  sandbox_api::PlatformRequest platform;
  platform.set_sandbox_id("sb1");
  check_thrown(pod, pod.call<sandbox_api::PlatformResponse>("Platform", platform),
               "Sandbox::platform");
  sandbox_api::SandboxMetricsRequest metrics;
  metrics.set_sandbox_id("sb1");
  check_thrown(pod, pod.call<sandbox_api::SandboxMetricsResponse>("SandboxMetrics", metrics),
               "Sandbox::metrics");
  sandbox_api::SandboxStatusRequest verbose;
  verbose.set_sandbox_id("sb1");
  verbose.set_verbose(true);
  check_thrown(pod, pod.call<sandbox_api::SandboxStatusResponse>("SandboxStatus", verbose),
               "Sandbox::details");
  CHECK(pod.status("sb1").state() == "SANDBOX_READY");  // not verbose: no vendor call

  pod.script.throws = {"stop"};
  auto wait = pod.wait_async("sb1");
  check_thrown(pod, pod.stop("sb1"), "Sandbox::stop");
  CHECK(pod.status("sb1").state() == "SANDBOX_READY");
  pod.script.throws.clear();
  REQUIRE(pod.stop("sb1").status.ok());
  REQUIRE(wait.get().status.ok());

  pod.script.throws = {"shutdown"};
  check_thrown(pod, pod.shutdown("sb1"), "Sandbox::shutdown");
  CHECK(pod.ping("sb1").status.ok());  // kept for the retry
  pod.script.throws.clear();
  REQUIRE(pod.shutdown("sb1").status.ok());
  CHECK(pod.shutdown_control.requests == 1);
  CHECK(pod.script.recorded() ==
        std::vector<std::string>{"create sb1", "start", "start", "platform", "metrics", "details",
                                 "stop 0", "stop 0", "shutdown", "shutdown"});
}
