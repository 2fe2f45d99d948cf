// A shim that declares mount capabilities and answers in JSON (tests/shims/
// mount_capabilities_shim.cpp) under containerd 2.1, which knows neither the 2.4
// extension nor the 2.2 annotation: the JSON answer carrying the extension must be read
// as before (version 3, ttrpc), containers run and exec, and -info carries the
// annotation 2.2 - 2.4.0-beta.0 read. containerd 2.2+ cannot be installed here; their
// reading is unit-tested (tests/unit/protocol/bootstrap_2_4_test.cpp).
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "shim/pb/containerd/types.pb.h"
#include "support/busybox_rootfs.h"
#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"
#include "support/subprocess.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

std::string mountcaps_shim() {
  return std::filesystem::canonical(std::string(LIBSHIM_BINARY_DIR) +
                                    "/tests/containerd-shim-mountcaps-v1")
      .string();
}

}  // namespace

TEST_CASE("a shim with mount capabilities and a JSON answer runs under containerd 2.1",
          "[mount-capabilities]") {
  const std::string containerd = cached_containerd_bin("2.1");
  if (containerd.empty()) LIBSHIM_SKIP("containerd 2.1 not cached (cmake/fetch-containerd.sh)");
  ContainerdOptions options;
  options.containerd_bin = containerd;
  PrivateContainerd fx(options);
  const std::string rootfs = fx.dir() + "/rootfs";
  make_busybox_rootfs(rootfs);

  std::vector<std::string> run = {"run", "-d", "--runtime", mountcaps_shim()};
  for (const auto& flag : fx.run_flags(/*with_runc_root=*/false)) run.push_back(flag);
  run.insert(run.end(), {"--rootfs", rootfs, "m1", "/bin/sleep", "600"});
  REQUIRE(fx.ctr(run).ok());
  auto echoed = fx.ctr({"task", "exec", "--exec-id", "e1", "m1", "/bin/echo", "served"});
  CHECK(echoed.exit_code == 0);
  CHECK(echoed.out == "served\n");

  // containerd 2.1 wrote bootstrap.json from what it read of our JSON: the three fields
  // it knows; the extension was ignored, not an error.
  std::string text;
  REQUIRE(go_read_file(fx.bundle_dir("m1") + "/bootstrap.json", &text).ok());
  INFO(text);
  boost::json::object written = boost::json::parse(text).as_object();
  CHECK(written.at("version").as_int64() == 3);
  CHECK(written.at("protocol").as_string() == "ttrpc");
  CHECK(written.at("address").as_string().starts_with("unix://"));
  CHECK_FALSE(written.contains("extensions"));

  // -info, as containerd 2.2 - 2.4.0-beta.0 run it at Create (no options on stdin).
  CommandResult info = run_command({mountcaps_shim(), "-info"});
  REQUIRE(info.exit_code == 0);
  containerd::types::RuntimeInfo runtime_info;
  REQUIRE(runtime_info.ParseFromString(info.out));
  CHECK(runtime_info.name() == "io.containerd.mountcaps.v1");
  CHECK(runtime_info.annotations().at("containerd.io/runtime-allow-mounts") == "erofs,format/*");

  REQUIRE(fx.ctr_ok({"task", "kill", "-s", "KILL", "m1"}).ok());
  for (int i = 0; i < 100 && fx.ctr({"task", "rm", "m1"}).exit_code != 0; ++i) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK(fx.ctr({"container", "rm", "m1"}).exit_code == 0);
  CHECK(wait_no_live_shims(mountcaps_shim(), fx.ns(), 10s));
}

}  // namespace shim::test
