// protocol/running_shims.h: which command lines are the daemons `upgrade-all` upgrades.
#include "protocol/running_shims.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace {

using shim::detail::daemon_of_cmdline;
using shim::detail::RunningShim;
using shim::detail::ShimQuery;

std::string cmdline(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += word + '\0';  // as /proc/<pid>/cmdline has it
  return text;
}

const ShimQuery kRunc{.program_name = "containerd-shim-runc-v2",
                      .grpc_address = "/run/containerd/containerd.sock",
                      .ns = ""};

}  // namespace

TEST_CASE("running_shims: a daemon started by start is found with its namespace and id",
          "[upgrade]") {
  RunningShim shim;
  REQUIRE(daemon_of_cmdline(
      cmdline({"/usr/libexec/libshim/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id",
               "pod1", "-address", "/run/containerd/containerd.sock", "-debug"}),
      kRunc, &shim));
  CHECK(shim.ns == "k8s.io");
  CHECK(shim.id == "pod1");
  // The Go shim's and containerd 2.x's spellings parse the same way.
  REQUIRE(daemon_of_cmdline(cmdline({"containerd-shim-runc-v2", "--namespace=default", "-id=c1",
                                     "--address", "/run/containerd/containerd.sock"}),
                            kRunc, &shim));
  CHECK(shim.ns == "default");
  CHECK(shim.id == "c1");
}

TEST_CASE("running_shims: short-lived actions and other runtimes or containerds are left out",
          "[upgrade]") {
  RunningShim shim;
  const std::vector<std::string> daemon = {
      "/usr/bin/containerd-shim-runc-v2", "-namespace", "default", "-id", "c1", "-address",
      "/run/containerd/containerd.sock"};
  auto with = [&daemon](std::vector<std::string> extra) {
    std::vector<std::string> words = daemon;
    words.insert(words.end(), extra.begin(), extra.end());
    return cmdline(words);
  };
  CHECK(daemon_of_cmdline(with({}), kRunc, &shim));
  // start, delete, an upgrade under way: short-lived commands, not daemons.
  CHECK_FALSE(daemon_of_cmdline(with({"start"}), kRunc, &shim));
  CHECK_FALSE(daemon_of_cmdline(with({"delete"}), kRunc, &shim));
  CHECK_FALSE(daemon_of_cmdline(with({"upgrade-all"}), kRunc, &shim));
  CHECK_FALSE(daemon_of_cmdline(with({"-info"}), kRunc, &shim));
  // Another runtime's shim, another containerd, another namespace than asked for.
  ShimQuery wasm = kRunc;
  wasm.program_name = "containerd-shim-wasm-v1";
  CHECK_FALSE(daemon_of_cmdline(with({}), wasm, &shim));
  ShimQuery other_containerd = kRunc;
  other_containerd.grpc_address = "/tmp/test/containerd.sock";
  CHECK_FALSE(daemon_of_cmdline(with({}), other_containerd, &shim));
  ShimQuery k8s = kRunc;
  k8s.ns = "k8s.io";
  CHECK_FALSE(daemon_of_cmdline(with({}), k8s, &shim));
  // No id or namespace, bad flags, a zombie's empty command line, a name that only ends alike.
  CHECK_FALSE(daemon_of_cmdline(cmdline({"/usr/bin/containerd-shim-runc-v2", "-namespace",
                                         "default", "-address", "/run/containerd/containerd.sock"}),
                                kRunc, &shim));
  CHECK_FALSE(daemon_of_cmdline(with({"-bogus"}), kRunc, &shim));
  CHECK_FALSE(daemon_of_cmdline("", kRunc, &shim));
  CHECK_FALSE(
      daemon_of_cmdline(cmdline({"/usr/bin/my-containerd-shim-runc-v2", "-namespace", "default",
                                 "-id", "c1", "-address", "/run/containerd/containerd.sock"}),
                        kRunc, &shim));
}
