// Sanitized shims in the real path: the `sanitized:` ctest registration (label
// "sanitized", tests/CMakeLists.txt) runs every [sanitized] test case again with
// $LIBSHIM_TEST_SANITIZED_SHIMS naming an ASan+UBSan build dir (LIBSHIM_SANITIZE=ON, as
// tests/run.sh builds build-asan). Then:
//  - the tests run that dir's containerd-shim-runc-v2 and containerd-shim-example-v1
//    (shim_build_dir());
//  - PrivateContainerd starts containerd with ASAN_OPTIONS/UBSAN_OPTIONS whose log_path
//    is <its dir>/sanitizer/report: containerd passes its environment to `start`, which
//    passes it to the daemon (whose stderr is the bundle's log FIFO, so reports could
//    not be seen there);
//  - its destructor waits for the shims to exit by themselves (leak checks run at exit),
//    and fails the test case if any report was written (or reached containerd's log).
// See tests/README.md ("Sanitized shims").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace shim::test {

inline constexpr const char* kSanitizedShimsEnv = "LIBSHIM_TEST_SANITIZED_SHIMS";

// $LIBSHIM_TEST_SANITIZED_SHIMS, or nullopt when unset or empty.
std::optional<std::string> sanitized_shim_build_dir();

// Where the shim binaries under test are built: the sanitized build dir, else this
// build tree (LIBSHIM_BINARY_DIR). Holds shim-runc/ and shim-example/.
std::string shim_build_dir();

// Why the sanitized shims cannot run (a binary is not built), or nullopt (also when not
// in sanitized mode): the test is skipped then.
std::optional<std::string> sanitized_shims_unavailable();

// Throws std::runtime_error (the test fails) if a sanitized shim has no ASan in it.
void require_sanitized_shims();

// ASAN_OPTIONS and UBSAN_OPTIONS ("K=V") that write every report to
// <log_dir>/report.<pid>, with stacks, leak checking at exit, and UBSan fatal.
std::vector<std::string> sanitizer_env(const std::string& log_dir);

// The report files in `log_dir` (their path and text), oldest first; removes them when
// `remove` is set.
struct SanitizerReport {
  std::string path;
  std::string text;
};
std::vector<SanitizerReport> read_sanitizer_reports(const std::string& log_dir, bool remove);

// Lines of `log` (containerd's log, which holds what shims write to their log FIFO) that
// only a sanitizer prints: a report that missed the log_path.
std::vector<std::string> sanitizer_lines(const std::string& log);

// Waits up to `timeout` until no live process runs a binary of the sanitized build dir
// with `-address <grpc_address>` (a shim of that containerd): LeakSanitizer runs when a
// shim exits, and a shim SIGKILLed by the fixture's clean-up would take its report along.
void wait_for_sanitized_shims(const std::string& grpc_address, std::chrono::milliseconds timeout);

// What fails a test: the reports in `log_dir` and the sanitizer lines of containerd's log
// `containerd_log`, or "" when there are none.
std::string sanitizer_failure(const std::string& log_dir, const std::string& containerd_log);

}  // namespace shim::test
