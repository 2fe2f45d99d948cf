// CheckpointOptions.parent_path (field 10, containerd 2.4: #13699) end to end through the
// Instance's checkpoint: the options Any as containerd sends it, built from upstream's
// oci.proto (tests/data/bootstrap/checkpoint_options_parent_path.hex), becomes runc's
// `--parent-path`, where the 2.4 Go shim puts it (go-runc CheckpointOpts.args: image,
// work, parent, then the flags; cmd/containerd-shim-runc-v2/process/init.go). A real
// incremental checkpoint (a pre-dump, then this) needs CONFIG_MEM_SOFT_DIRTY, which this
// kernel lacks (tests/README.md, "CRIU").
#include <sys/stat.h>

#include <future>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "process/posix_spawner.h"
#include "shim/oci/cli_runtime.h"
#include "shim/process/work_pool.h"
#include "support/temp_dir.h"
#include "support/wire_capture.h"
#include "unit/isolated_child.h"
#include "unit/reaper_fixture.h"

namespace {

// Records its argv, one per line, and succeeds.
constexpr std::string_view kRecordingRuntime = R"SH(#!/bin/sh
printf '%s\n' "$@" > "$(dirname "$0")/argv"
exit 0
)SH";

std::string read_text(const std::string& path) {
  std::string content;
  if (!shim::go_read_file(path, &content).ok()) return "<unreadable>";
  return content;
}

std::string lines(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) text += arg + "\n";
  return text;
}

}  // namespace

TEST_CASE("CliInstance::checkpoint passes CheckpointOptions.parent_path as --parent-path",
          "[checkpoint]") {
  const std::string options_bytes =
      shim::test::load_data_hex("bootstrap/checkpoint_options_parent_path.hex");
  auto outcome = shim_test::run_in_child([&](shim_test::ChildReport& report) {
    shim::test::TempDir dir("parent-path-");
    const std::string fake = dir.sub("fake-runc");
    const std::string bundle = dir.sub("b1");
    report.check(shim::go_write_file(fake, kRecordingRuntime, 0755).ok(), "write fake runtime");
    report.check(::mkdir(bundle.c_str(), 0700) == 0, "bundle dir");
    shim_test::LoopWithReaper loop;
    shim::PosixSpawner spawner;
    shim::WorkPool pool(1);
    shim::ContainerConfig config{.id = "t1", .bundle = bundle};
    shim::oci::CliInstance instance(
        config, {},
        shim::oci::CliClient(
            loop.reaper, spawner,
            shim::oci::CliConfig{.binary = fake, .root = "/run/r", .ns = "ns", .bundle = bundle}));

    shim::CheckpointConfig checkpoint{.path = dir.sub("img"), .options = shim::pb::Any()};
    checkpoint.options->set_type_url(
        "containerd.runc.v1.CheckpointOptions");  // as containerd's typeurl
    checkpoint.options->set_value(options_bytes);
    std::promise<shim::Status> done;
    pool.post([&] { done.set_value(instance.checkpoint(checkpoint)); });
    shim::Status status = done.get_future().get();
    report.check(status.ok(), "checkpoint: " + status.to_string());
    // The request's path wins over image_path; the given work path is used (and kept);
    // exit is false, so --leave-running; open_tcp is --tcp-established.
    const std::string expected =
        lines({"--root", "/run/r/ns", "--log", bundle + "/log.json", "--log-format", "json",
               "checkpoint", "--image-path", dir.sub("img"), "--work-path", "/var/lib/criu-work",
               "--parent-path", "../pre-dump-1", "--tcp-established", "--leave-running", "t1"});
    report.check(read_text(dir.sub("argv")) == expected, "argv:\n" + read_text(dir.sub("argv")));

    // Without parent_path (containerd before 2.4 never sets it): no --parent-path.
    shim::oci::CheckpointOptions plain;
    plain.set_work_path("/var/lib/criu-work");
    checkpoint.options->set_value(plain.SerializeAsString());
    std::promise<shim::Status> again;
    pool.post([&] { again.set_value(instance.checkpoint(checkpoint)); });
    report.check(again.get_future().get().ok(), "checkpoint without parent");
    report.check(read_text(dir.sub("argv")).find("--parent-path") == std::string::npos,
                 "no --parent-path: " + read_text(dir.sub("argv")));
    pool.stop();
  });
  shim_test::require_child_passed(outcome);
}
