// Which OCI runtime binary the shim-runc end-to-end tests drive. By default runc (the
// shim's default BinaryName). The `integration-crun:` ctest registration runs every
// [runtime-binary] test case again with $LIBSHIM_TEST_RUNC_BINARY set to the crun wrapper
// (tests/support/crun-cgroup-v1.sh); PrivateContainerd::run_flags() then adds
// `--runc-binary <it>` to `ctr run`. See tests/README.md ("Other runtimes").
#pragma once

#include <optional>
#include <string>

namespace shim::test {

inline constexpr const char* kRuncBinaryEnv = "LIBSHIM_TEST_RUNC_BINARY";

// $LIBSHIM_TEST_RUNC_BINARY, or nullopt when unset or empty (runc).
std::optional<std::string> runc_binary_under_test();

// The wrapper that runs Debian's crun with pure cgroup v1 on this hybrid-cgroup host.
std::string crun_wrapper_path();

// The wrapper that runs gVisor's runsc with --network=none (see the script for why).
std::string runsc_wrapper_path();

// Why `binary --version` does not run (missing, not executable, exits non-zero), or
// nullopt when it does. For crun and runc this also proves the wrapper's setup works.
std::optional<std::string> runtime_binary_unavailable(const std::string& binary);

}  // namespace shim::test
