// CliCommandLine: every runc command line compared with what go-runc builds for the Go
// runc shim (go-runc v1.0.0/v1.1.0 runc.go, containerd pkg/process).
#include <unistd.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "shim/oci/cli_command.h"

namespace {

using shim::oci::CliCommandLine;
using shim::oci::CliConfig;
using Argv = std::vector<std::string>;

const std::string kBundle = "/run/containerd/io.containerd.runtime.v2.task/default/t1";

CliCommandLine default_runc() {
  return CliCommandLine(CliConfig{.ns = "default", .bundle = kBundle});
}

// The global flags go-runc puts in front of every command for the Go shim.
Argv with_globals(const Argv& command) {
  Argv argv{"runc", "--root", "/run/containerd/runc/default", "--log", kBundle + "/log.json",
            "--log-format", "json"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace

TEST_CASE("runc global flags: root per namespace, log.json, json format", "[runc]") {
  CliCommandLine runc = default_runc();
  CHECK(runc.binary() == "runc");
  CHECK(runc.state_root() == "/run/containerd/runc/default");
  CHECK(runc.log_path() == kBundle + "/log.json");
  CHECK(runc.prefix() == with_globals({}));

  CliCommandLine custom(CliConfig{.binary = "/usr/local/bin/crun",
                                    .root = "/tmp/state/",
                                    .ns = "k8s.io",
                                    .bundle = "/b//x/",
                                    .systemd_cgroup = true});
  CHECK(custom.prefix() == Argv{"/usr/local/bin/crun", "--root", "/tmp/state/k8s.io", "--log",
                                "/b/x/log.json", "--log-format", "json", "--systemd-cgroup"});
}

TEST_CASE("runc create/start/exec command lines", "[runc]") {
  CliCommandLine runc = default_runc();
  CHECK(runc.create("t1", {}) ==
        with_globals({"create", "--bundle", kBundle, "--pid-file", kBundle + "/init.pid", "t1"}));
  CHECK(runc.create("t1", {.console_socket = "/run/user/0/pty123/pty.sock",
                           .no_pivot = true,
                           .no_new_keyring = true}) ==
        with_globals({"create", "--bundle", kBundle, "--pid-file", kBundle + "/init.pid",
                      "--console-socket", "/run/user/0/pty123/pty.sock", "--no-pivot",
                      "--no-new-keyring", "t1"}));
  CHECK(runc.start("t1") == with_globals({"start", "t1"}));
  CHECK(runc.exec("t1", {.exec_id = "e1", .process_file = "/tmp/runc-process42"}) ==
        with_globals({"exec", "--process", "/tmp/runc-process42", "--detach", "--pid-file",
                      kBundle + "/e1.pid", "t1"}));
  CHECK(runc.exec("t1", {.exec_id = "e1",
                         .process_file = "/tmp/runc-process42",
                         .console_socket = "/tmp/pty9/pty.sock"}) ==
        with_globals({"exec", "--process", "/tmp/runc-process42", "--console-socket",
                      "/tmp/pty9/pty.sock", "--detach", "--pid-file", kBundle + "/e1.pid",
                      "t1"}));
}

TEST_CASE("runc kill/delete/pause/resume/ps/update/state command lines", "[runc]") {
  CliCommandLine runc = default_runc();
  CHECK(runc.kill("t1", 15, false) == with_globals({"kill", "t1", "15"}));
  CHECK(runc.kill("t1", 9, true) == with_globals({"kill", "--all", "t1", "9"}));
  CHECK(runc.remove("t1", false) == with_globals({"delete", "t1"}));
  CHECK(runc.remove("t1", true) == with_globals({"delete", "--force", "t1"}));
  CHECK(runc.pause("t1") == with_globals({"pause", "t1"}));
  CHECK(runc.resume("t1") == with_globals({"resume", "t1"}));
  CHECK(runc.ps("t1") == with_globals({"ps", "--format", "json", "t1"}));
  CHECK(runc.update("t1") == with_globals({"update", "--resources=-", "t1"}));
  CHECK(runc.state("t1") == with_globals({"state", "t1"}));
  CHECK(runc.version() == with_globals({"--version"}));
  CHECK(shim::oci::cli_features_command("/usr/sbin/runc") == Argv{"/usr/sbin/runc", "features"});
}

TEST_CASE("runc checkpoint and restore command lines", "[runc]") {
  CliCommandLine runc = default_runc();
  CHECK(runc.checkpoint("t1", {.image_path = "/img", .work_path = kBundle + "/work/criu-work"}) ==
        with_globals({"checkpoint", "--image-path", "/img", "--work-path",
                      kBundle + "/work/criu-work", "--leave-running", "t1"}));
  CHECK(runc.checkpoint("t1", {.image_path = "/img",
                               .work_path = "/w",
                               .parent_path = "/parent",
                               .open_tcp = true,
                               .external_unix_sockets = true,
                               .terminal = true,
                               .file_locks = true,
                               .cgroups_mode = "soft",
                               .empty_namespaces = {"network", "ipc"},
                               .leave_running = false}) ==
        with_globals({"checkpoint", "--image-path", "/img", "--work-path", "/w", "--parent-path",
                      "/parent", "--tcp-established", "--ext-unix-sk", "--shell-job",
                      "--file-locks", "--manage-cgroups-mode", "soft", "--empty-ns", "network",
                      "--empty-ns", "ipc", "t1"}));
  CHECK(runc.restore("t1", {.image_path = "/img", .work_path = kBundle + "/work"}) ==
        with_globals({"restore", "--image-path", "/img", "--work-path", kBundle + "/work",
                      "--detach", "--pid-file", kBundle + "/init.pid", "-no-subreaper",
                      "--bundle", kBundle, "t1"}));
  CHECK(runc.restore("t1", {.image_path = "/img",
                            .work_path = "/w",
                            .parent_path = "/p",
                            .console_socket = "/s",
                            .no_pivot = true}) ==
        with_globals({"restore", "--image-path", "/img", "--work-path", "/w", "--parent-path",
                      "/p", "--detach", "--pid-file", kBundle + "/init.pid", "--console-socket",
                      "/s", "--no-pivot", "-no-subreaper", "--bundle", kBundle, "t1"}));
}

TEST_CASE("runc pid files are absolute, paths cleaned like Go's filepath", "[runc]") {
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  CliCommandLine relative(CliConfig{.ns = "ns", .bundle = "./bundles/../b1"});
  CHECK(relative.log_path() == "b1/log.json");
  CHECK(relative.init_pid_file() == shim::go_join_path(cwd, "b1/init.pid"));
  CHECK(relative.exec_pid_file("x") == shim::go_join_path(cwd, "b1/x.pid"));
  CHECK(relative.create("c", {})[8] == "--bundle");
  CHECK(relative.create("c", {})[9] == "./bundles/../b1");  // --bundle is passed as given

  CHECK(shim::go_clean_path("") == ".");
  CHECK(shim::go_clean_path("/../a//b/./c/..") == "/a/b");
  CHECK(shim::go_clean_path("a/../../b") == "../b");
  CHECK(shim::go_clean_path("//") == "/");
  CHECK(shim::go_join_path("", "") == "");
  CHECK(shim::go_join_path("/run/containerd/runc", "") == "/run/containerd/runc");
  CHECK(shim::go_join_path("a/", "/b") == "a/b");
}
