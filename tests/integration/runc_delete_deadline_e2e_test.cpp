// The `delete` action ends within containerd's 5 s however long the runtime hangs.
// containerd runs `<shim> ... delete` for a task whose shim is gone and kills it after
// 5 s (core/runtime/v2/shim.go cleanupAfterDeadShim, cleanupTimeout); containerd 2.4
// then reports "shim killed after context deadline exceeded" (binary.go
// shimCallError, #13912), publishes exit status 255 and keeps the bundle. Our shim-runc
// runs `<runtime> delete --force`, which here is a runtime that never returns: the
// action must kill it at its 3 s deadline (shim/action_context.h), still unmount and
// answer "killed, 137", and leave no runtime process behind. No containerd is needed:
// the action is the binary, run the way containerd runs it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "support/runc_e2e.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

// Writes its pid next to itself, then sleeps as the same process (a hung runc).
constexpr std::string_view kHangingRuntime = R"SH(#!/bin/sh
echo $$ > "$(dirname "$0")/hung.pid"
exec sleep 3601
)SH";

bool process_alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("the delete action ends within containerd's 5 s when the runtime hangs",
          "[runc][delete-deadline]") {
  TempDir dir("delete-deadline-");
  const std::string runtime = dir.sub("hanging-runc");
  const std::string bundle = dir.sub("t1");
  REQUIRE(go_write_file(runtime, kHangingRuntime, 0755).ok());
  REQUIRE(::mkdir(bundle.c_str(), 0711) == 0);
  // What CliRuntime::open leaves in a bundle: the runtime's path and the options.
  REQUIRE(go_write_file(bundle + "/runtime", runtime, 0644).ok());
  REQUIRE(go_write_file(bundle + "/options.json", "{}", 0644).ok());
  REQUIRE(go_write_file(bundle + "/config.json", "{}", 0644).ok());  // no group annotation

  CommandOptions options;
  options.cwd = bundle;
  options.timeout = 20s;  // fails the test rather than hanging it
  const auto began = std::chrono::steady_clock::now();
  CommandResult result = run_command(
      {our_runc_shim(), "-namespace", "deadline", "-address", dir.sub("no-containerd.sock"), "-id",
       "t1", "-bundle", bundle, "-debug", "delete"},
      options);
  const auto took = std::chrono::steady_clock::now() - began;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  INFO(result.describe());
  WARN(fmt::format("LIBSHIM-DELETE-DEADLINE: delete with a hanging runtime took {} ms", ms));

  // Within containerd's 5 s, and only because the runtime was killed at the 3 s deadline.
  CHECK(ms < 5000);
  CHECK(ms >= 2900);
  REQUIRE(result.exit_code == 0);
  containerd::task::v2::DeleteResponse response;
  REQUIRE(response.ParseFromString(result.out));
  CHECK(response.exit_status() == 137);
  CHECK(response.pid() == 4294967295u);  // no init.pid: Go's uint32(-1)
  CHECK(response.has_exited_at());
  // The kill is reported as a warning containerd logs ("warnings while cleaning up").
  CHECK(result.err.find("failed to remove runc container") != std::string::npos);
  // killed (SIGKILL, go-runc's "exit status 137" text for a command its context killed)
  CHECK(result.err.find("hanging-runc did not terminate successfully: exit status 137") !=
        std::string::npos);

  // The hung runtime is gone, not orphaned.
  std::string pid_text;
  REQUIRE(go_read_file(dir.sub("hung.pid"), &pid_text).ok());
  const pid_t hung = static_cast<pid_t>(std::atoi(pid_text.c_str()));
  REQUIRE(hung > 0);
  for (int i = 0; i < 50 && process_alive(hung); ++i) ::usleep(20000);
  CHECK_FALSE(process_alive(hung));
}

}  // namespace shim::test
