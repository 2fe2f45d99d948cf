// A shim that runs its pods itself (tests/shims/sandbox_shim.cpp), started as containerd
// 2.x's shim-mode sandbox controller starts it (plugins/sandbox/controller.go): `start`
// with BootstrapParams in a bundle without config.json, then the sandbox API on the
// socket it answers, the task API's Shutdown that containerd sends after every task
// delete, ShutdownSandbox, and the `delete` action containerd runs for a dead shim. No
// containerd involved: tests/support/example_shim_sandbox.h plays it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include <boost/json/parse.hpp>

#include "shim/pb/containerd/bootstrap.pb.h"
#include "shim/pb/containerd/sandbox.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "support/example_shim_sandbox.h"
#include "support/ttrpc_harness.h"

namespace {

namespace fs = std::filesystem;
namespace sandbox_api = containerd::runtime::sandbox::v1;
using namespace std::chrono_literals;
using shim::test::Caller;
using shim::test::CallResult;
using shim::test::ShimRun;
using shim::test::ShimSandbox;

constexpr const char* kSandboxApi = "containerd.runtime.sandbox.v1.Sandbox";

std::string sandbox_shim_binary() {
  return std::string(LIBSHIM_BINARY_DIR) + "/tests/containerd-shim-sandbox-v1";
}

template <class Response>
Response sandbox_call(shim::test::SyncClient& client, const std::string& method,
                      const google::protobuf::MessageLite& request) {
  CallResult result = client.call(kSandboxApi, method, request.SerializeAsString());
  INFO(method << ": " << result.status.to_string());
  REQUIRE(result.status.ok());
  Response response;
  REQUIRE(response.ParseFromString(result.payload));
  return response;
}

// The wait status of `daemon` (our child through the subreaper) once it exited within
// `timeout`; -1 if it had not.
int wait_for_exit(pid_t daemon, std::chrono::milliseconds timeout) {
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(daemon, &status, WNOHANG) == daemon) return status;
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

}  // namespace

TEST_CASE("sandbox shim: a pod's life as containerd 2.x's shim-mode controller drives it",
          "[shim-protocol][sandbox]") {
  shim::test::SubreaperScope subreaper;
  ShimSandbox sb(sandbox_shim_binary());
  const std::string bundle = sb.make_bundle_without_spec("sb1");
  REQUIRE_FALSE(fs::exists(bundle + "/config.json"));

  ShimRun run = sb.start(Caller::k2_3, "sb1", bundle);
  shim::test::check_clean_start(run);
  containerd::runtime::bootstrap::v1::BootstrapResult answer;
  INFO(run.describe());
  REQUIRE(answer.ParseFromString(run.out));
  // No config.json: the group is the sandbox id.
  CHECK(answer.address() == "unix://" + sb.socket_path("sb1", sb.socket_dir()));
  const pid_t daemon = shim::test::serving_daemon(answer.address());
  INFO(sb.logs());
  {
    shim::test::SyncClient client(answer.address());
    sandbox_api::CreateSandboxRequest create;
    create.set_sandbox_id("sb1");
    create.set_bundle_path(bundle);
    create.set_netns_path("/var/run/netns/cni-test");
    sandbox_call<sandbox_api::CreateSandboxResponse>(client, "CreateSandbox", create);
    sandbox_api::StartSandboxRequest start;
    start.set_sandbox_id("sb1");
    auto started = sandbox_call<sandbox_api::StartSandboxResponse>(client, "StartSandbox", start);
    CHECK(started.pid() == static_cast<std::uint32_t>(daemon));

    sandbox_api::SandboxStatusRequest status;
    status.set_sandbox_id("sb1");
    status.set_verbose(true);
    auto ready = sandbox_call<sandbox_api::SandboxStatusResponse>(client, "SandboxStatus", status);
    CHECK(ready.state() == "SANDBOX_READY");
    CHECK(ready.pid() == static_cast<std::uint32_t>(daemon));
    CHECK(ready.created_at().seconds() == started.created_at().seconds());
    REQUIRE(ready.info().contains("info"));
    boost::json::value info = boost::json::parse(ready.info().at("info"));
    CHECK(info.at("holder").as_string() == "shim");
    CHECK(info.at("netnsPath").as_string() == "/var/run/netns/cni-test");

    sandbox_api::WaitSandboxRequest wait;
    wait.set_sandbox_id("sb1");
    auto waiting = client.call_async(kSandboxApi, "WaitSandbox", wait.SerializeAsString());
    CHECK(waiting.wait_for(300ms) == std::future_status::timeout);

    sandbox_api::StopSandboxRequest stop;
    stop.set_sandbox_id("sb1");
    sandbox_call<sandbox_api::StopSandboxResponse>(client, "StopSandbox", stop);
    REQUIRE(waiting.wait_for(5s) == std::future_status::ready);
    CallResult waited = waiting.get();
    REQUIRE(waited.status.ok());
    sandbox_api::WaitSandboxResponse exit;
    REQUIRE(exit.ParseFromString(waited.payload));
    CHECK(exit.exit_status() == 0);
    status.set_verbose(false);
    auto stopped =
        sandbox_call<sandbox_api::SandboxStatusResponse>(client, "SandboxStatus", status);
    CHECK(stopped.state() == "SANDBOX_NOTREADY");
    CHECK(stopped.exited_at().seconds() == exit.exited_at().seconds());

    // containerd sends the task API's Shutdown after every task delete of the pod: the
    // sandbox keeps the shim.
    CallResult task_shutdown =
        client.call("containerd.task.v3.Task", "Shutdown",
                    containerd::task::v2::ShutdownRequest().SerializeAsString());
    REQUIRE(task_shutdown.status.ok());
    CHECK(wait_for_exit(daemon, 500ms) == -1);
    sandbox_api::PingRequest ping;
    ping.set_sandbox_id("sb1");
    sandbox_call<sandbox_api::PingResponse>(client, "PingSandbox", ping);

    sandbox_api::ShutdownSandboxRequest shutdown;
    shutdown.set_sandbox_id("sb1");
    sandbox_call<sandbox_api::ShutdownSandboxResponse>(client, "ShutdownSandbox", shutdown);
  }
  // Nothing keeps the shim now: it removes its socket and exits 0.
  int status = wait_for_exit(daemon, 5s);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(answer.address().substr(7)));

  // containerd's clean-up after a dead shim runs `delete` in the same bundle: it succeeds
  // without a config.json or the runtime files a task's Create leaves, answering as
  // containerd's runc shim does (no init pid: -1 as uint32; killed: 137).
  ShimRun removed =
      shim::test::run_shim({sb.binary(), "-namespace", shim::test::kSandboxNamespace, "-address",
                            sb.grpc(), "-id", "sb1", "-bundle", bundle, "delete"},
                           sb.env_for(Caller::k2_3), "", bundle);
  INFO(removed.describe());
  CHECK(removed.exit_code == 0);
  containerd::task::v2::DeleteResponse deleted;
  REQUIRE(deleted.ParseFromString(removed.out));
  CHECK(deleted.pid() == 4294967295u);
  CHECK(deleted.exit_status() == 137);
}
