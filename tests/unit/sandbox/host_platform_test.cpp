// Sandbox::platform's default: uname's machine names as Go's GOARCH (and GOARM) name them.
#include <catch2/catch.hpp>

#include "sandbox/host_platform.h"
#include "shim/sandbox.h"

TEST_CASE("host platform: machine names become Go's GOARCH", "[sandbox]") {
  CHECK(shim::go_architecture("x86_64") == "amd64");
  CHECK(shim::go_architecture("aarch64") == "arm64");
  CHECK(shim::go_architecture("i686") == "386");
  CHECK(shim::go_architecture("armv7l") == "arm");
  CHECK(shim::go_architecture("ppc64le") == "ppc64le");
  CHECK(shim::go_architecture("s390x") == "s390x");
  CHECK(shim::go_architecture("riscv64") == "riscv64");
  CHECK(shim::go_architecture("loongarch64") == "loong64");
  CHECK(shim::go_architecture("vax") == "vax");  // unknown to Go: as it is
  CHECK(shim::go_arm_variant("armv7l") == "v7");
  CHECK(shim::go_arm_variant("armv6l") == "v6");
  CHECK(shim::go_arm_variant("aarch64").empty());
  CHECK(shim::go_arm_variant("x86_64").empty());
}

namespace {
class BareSandbox final : public shim::Sandbox {
 public:
  shim::Status start(shim::SandboxStarted*) override { return {}; }
  shim::Status stop(std::chrono::seconds, std::uint32_t*) override { return {}; }
  shim::Status shutdown() override { return {}; }
};
}  // namespace

TEST_CASE("host platform: Sandbox's defaults", "[sandbox]") {
  BareSandbox sandbox;
  containerd::types::Platform platform;
  REQUIRE(sandbox.platform(&platform).ok());
  CHECK(platform.os() == "linux");
  CHECK(platform.architecture() == shim::go_architecture(shim::host_machine()));
  CHECK_FALSE(platform.architecture().empty());
  containerd::types::Metric metric;
  shim::Status metrics = sandbox.metrics(&metric);
  CHECK(metrics.code() == shim::Code::kUnimplemented);
  boost::json::object info;
  REQUIRE(sandbox.details(&info).ok());
  CHECK(info.empty());
}
