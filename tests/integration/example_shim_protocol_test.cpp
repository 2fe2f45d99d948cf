// The shim binary protocol of the built shim-example, run as a subprocess exactly as
// containerd 1.6, 1.7 and 2.3 run it (runtime/v2/binary.go, core/runtime/v2/binary.go):
// argv, env, stdin, cwd = bundle, own process group, combined-output-until-EOF. The
// `start` action (its answer for each caller, the detached daemon it leaves), -v, -info
// and `delete`. No containerd involved: tests/support/example_shim_sandbox.h plays it.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "shim/pb/containerd/bootstrap.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "support/example_shim_sandbox.h"

namespace {

namespace fs = std::filesystem;
namespace bootstrap_v1 = containerd::runtime::bootstrap::v1;
using namespace std::chrono_literals;
using shim::test::Caller;
using shim::test::check_clean_start;
using shim::test::check_daemon_attributes;
using shim::test::chrooted_child;
using shim::test::clean_env;
using shim::test::connect_shim_pid;
using shim::test::is_socket_with_mode;
using shim::test::kSandboxContainerd;
using shim::test::kSandboxNamespace;
using shim::test::run_shim;
using shim::test::serving_daemon;
using shim::test::ShimRun;
using shim::test::ShimSandbox;
using shim::test::slurp;
using shim::test::SubreaperScope;
using shim::test::terminate_daemon;

}  // namespace


TEST_CASE("shim-example start as containerd 1.6 runs it: plain address, detached daemon",
          "[shim-protocol]") {
  SubreaperScope subreaper;
  ShimSandbox sb;
  const std::string bundle = sb.make_bundle("t1");
  const std::string socket = sb.default_socket_path("t1");
  const std::string address = "unix://" + socket;

  ShimRun run = sb.start(Caller::k1_6, "t1", bundle);
  check_clean_start(run);
  CHECK(run.out == address);  // exactly: no newline, nothing else
  CHECK(slurp(bundle + "/address") == address);
  CHECK(is_socket_with_mode(socket, 0600));

  const pid_t daemon = serving_daemon(address);
  REQUIRE(sb.daemons() == std::vector<pid_t>{daemon});
  check_daemon_attributes(sb, daemon, run, bundle, "t1", false);
  CHECK(connect_shim_pid(address, "containerd.task.v3.Task") == static_cast<std::uint32_t>(daemon));

  SECTION("a second start for the same group reuses the daemon") {
    const std::string bundle2 = sb.make_bundle("t2", {{"io.containerd.runc.v2.group", "t1"}});
    ShimRun second = sb.start(Caller::k1_6, "t2", bundle2);
    check_clean_start(second);
    CHECK(second.out == address);
    CHECK(slurp(bundle2 + "/address") == address);
    CHECK(sb.daemons() == std::vector<pid_t>{daemon});
    CHECK(ShimSandbox::processes_with_cwd_under(bundle2).empty());  // none being spawned
  }
  SECTION("garbage on stdin does not fail start") {
    const std::string bundle2 = sb.make_bundle("t3");
    static constexpr char kGarbage[] = "\x0a\xff\xff\xff\xff\x0f junk \x80\x00\x12";
    ShimRun garbage =
        sb.start(Caller::k1_7, "t3", bundle2, std::string(kGarbage, sizeof kGarbage - 1));
    check_clean_start(garbage);
    CHECK(garbage.out == "unix://" + sb.default_socket_path("t3"));
    pid_t second = serving_daemon(garbage.out);
    CHECK(second != daemon);
    CHECK(sb.daemons().size() == 2);
  }

  CHECK(terminate_daemon(daemon) == 0);
  CHECK_FALSE(fs::exists(socket));
  for (pid_t other : sb.daemons()) CHECK(terminate_daemon(other) == 0);
}

TEST_CASE("shim-example start as containerd 1.7 runs it: legacy Any, group annotation, -debug",
          "[shim-protocol]") {
  SubreaperScope subreaper;
  ShimSandbox sb;
  // CRI's pod annotation names the group: the socket is the pod's, not the task's.
  const std::string bundle = sb.make_bundle("app1", {{"io.kubernetes.cri.sandbox-id", "pod1"}});
  const std::string socket = sb.default_socket_path("pod1");

  ShimRun run = sb.start(Caller::k1_7, "app1", bundle, std::nullopt, /*debug=*/true);
  check_clean_start(run);
  CHECK(run.out == "unix://" + socket);  // 1.7 rejects JSON version 3: plain it is
  CHECK(slurp(bundle + "/address") == run.out);
  CHECK(is_socket_with_mode(socket, 0600));
  const pid_t daemon = serving_daemon(run.out);
  REQUIRE(sb.daemons() == std::vector<pid_t>{daemon});
  check_daemon_attributes(sb, daemon, run, bundle, "pod1", true);

  CHECK(terminate_daemon(daemon) == 0);
  CHECK_FALSE(fs::exists(socket));
}

TEST_CASE("shim-example start as containerd 2.3 runs it: BootstrapParams in, BootstrapResult out",
          "[shim-protocol]") {
  SubreaperScope subreaper;
  ShimSandbox sb;
  REQUIRE(sb.socket_dir().size() <= 42);  // containerd 2.3's own limit for socket_dir
  const std::string bundle = sb.make_bundle("t1");
  const std::string socket = sb.socket_path("t1", sb.socket_dir());

  SECTION("a fresh socket dir") {}
  SECTION("a stale socket file of a dead shim is replaced") {
    fs::create_directories(sb.socket_dir());
    ::chmod(sb.socket_dir().c_str(), 0700);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);  // the file stays, nobody listens
    REQUIRE(fs::is_socket(socket));
  }

  ShimRun run = sb.start(Caller::k2_3, "t1", bundle, std::nullopt, /*debug=*/true);
  check_clean_start(run);
  bootstrap_v1::BootstrapResult result;
  REQUIRE(result.ParseFromString(run.out));
  CHECK(result.version() == 3);
  CHECK(result.protocol() == "ttrpc");
  CHECK(result.address() == "unix://" + socket);
  CHECK(result.SerializeAsString() == run.out);  // nothing but the message
  CHECK(slurp(bundle + "/address") == result.address());

  struct stat dir_stat {};
  REQUIRE(::stat(sb.socket_dir().c_str(), &dir_stat) == 0);
  CHECK((dir_stat.st_mode & 07777) == 0700);
  CHECK(is_socket_with_mode(socket, 0600));

  const pid_t daemon = serving_daemon(result.address());
  REQUIRE(sb.daemons() == std::vector<pid_t>{daemon});
  // LOG_LEVEL_DEBUG asks for -debug.
  check_daemon_attributes(sb, daemon, run, bundle, "t1", true);
  CHECK(connect_shim_pid(result.address(), "containerd.task.v3.Task") ==
        static_cast<std::uint32_t>(daemon));

  CHECK(terminate_daemon(daemon) == 0);
  CHECK_FALSE(fs::exists(socket));
}

TEST_CASE("shim-example -v and -info", "[shim-protocol]") {
  ShimSandbox sb;
  ShimRun version = run_shim({sb.binary(), "-v"}, clean_env({}), "", sb.dir());
  INFO(version.describe());
  CHECK(version.exit_code == 0);
  CHECK(version.err.empty());
  CHECK(version.out.starts_with(sb.binary() + ":\n  Version:  "));
  CHECK(version.out.find("\n  libshim:  ") != std::string::npos);

  ShimRun info = run_shim({sb.binary(), "-info"}, clean_env({}), "", sb.dir());
  INFO(info.describe());
  CHECK(info.exit_code == 0);
  CHECK(info.err.empty());
  containerd::types::RuntimeInfo runtime;
  REQUIRE(runtime.ParseFromString(info.out));
  CHECK(runtime.SerializeAsString() == info.out);
  CHECK(runtime.name() == "io.containerd.example.v1");
  CHECK_FALSE(runtime.version().version().empty());
  CHECK_FALSE(runtime.has_options());

  // 2.x sends the runtime options Any on stdin; the Go shim echoes it back.
  auto options = ShimSandbox::runc_options_any();
  ShimRun echoed = run_shim({sb.binary(), "-info"}, clean_env({}), options.SerializeAsString(),
                            sb.dir());
  INFO(echoed.describe());
  CHECK(echoed.exit_code == 0);
  REQUIRE(runtime.ParseFromString(echoed.out));
  CHECK(runtime.options().type_url() == "containerd.runc.v1.Options");
  CHECK(runtime.options().value() == options.value());
}

TEST_CASE("shim-example delete prints only a DeleteResponse", "[shim-protocol]") {
  ShimSandbox sb;
  const std::string bundle = sb.make_bundle("t1");
  auto delete_argv = [&](bool with_namespace) {
    std::vector<std::string> argv = {sb.binary()};
    if (with_namespace) argv.insert(argv.end(), {"-namespace", kSandboxNamespace});
    argv.insert(argv.end(), {"-address", sb.grpc(), "-publish-binary", kSandboxContainerd, "-id",
                             "t1", "-bundle", bundle, "delete"});
    return argv;
  };
  auto now_seconds = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };

  SECTION("no init.pid: pid -1 as uint32, 137") {
    ShimRun run = run_shim(delete_argv(true), sb.env_for(Caller::k1_6), "", bundle);
    INFO(run.describe());
    CHECK(run.exit_code == 0);
    containerd::task::v2::DeleteResponse response;
    REQUIRE(response.ParseFromString(run.out));
    CHECK(response.SerializeAsString() == run.out);
    CHECK(response.pid() == 4294967295u);
    CHECK(response.exit_status() == 137);
    CHECK(std::abs(response.exited_at().seconds() - now_seconds()) < 60);
  }
  SECTION("a leftover init process (chrooted in the rootfs) is killed") {
    pid_t leftover = chrooted_child(bundle + "/rootfs");
    std::ofstream(bundle + "/init.pid") << leftover;
    ShimRun run = run_shim(delete_argv(true), sb.env_for(Caller::k1_7), "", bundle);
    INFO(run.describe());
    int status = 0;
    REQUIRE(::waitpid(leftover, &status, 0) == leftover);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    CHECK(run.exit_code == 0);
    containerd::task::v2::DeleteResponse response;
    REQUIRE(response.ParseFromString(run.out));
    CHECK(response.SerializeAsString() == run.out);
    CHECK(response.pid() == static_cast<std::uint32_t>(leftover));
    CHECK(response.exit_status() == 137);
  }
  SECTION("a stale init.pid naming someone else's process kills nothing") {
    // containerd runs `delete` after every task removal: init.pid then names a process
    // that is gone, and its pid may belong to an unrelated process by now.
    pid_t stranger = ::fork();
    REQUIRE(stranger >= 0);
    if (stranger == 0) {
      ::pause();
      ::_exit(0);
    }
    std::ofstream(bundle + "/init.pid") << stranger;
    ShimRun run = run_shim(delete_argv(true), sb.env_for(Caller::k1_6), "", bundle);
    INFO(run.describe());
    CHECK(run.exit_code == 0);
    std::this_thread::sleep_for(50ms);
    CHECK(::waitpid(stranger, nullptr, WNOHANG) == 0);  // still running
    ::kill(stranger, SIGKILL);
    ::waitpid(stranger, nullptr, 0);
    containerd::task::v2::DeleteResponse response;
    REQUIRE(response.ParseFromString(run.out));
    CHECK(response.exit_status() == 137);
  }
  SECTION("no namespace: an error on stderr only, exit 1") {
    ShimRun run = run_shim(delete_argv(false), clean_env({}), "", bundle);
    INFO(run.describe());
    CHECK(run.exit_code == 1);
    CHECK(run.out.empty());
    CHECK(run.err == "io.containerd.example.v1: shim namespace cannot be empty");
  }
}
