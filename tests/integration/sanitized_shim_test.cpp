// The sanitized run's own check (label "sanitized", tests/support/sanitized_shims.h): the
// shim daemons containerd starts really are the ASan+UBSan build, got the sanitizer
// options through containerd's environment, and a report one of them writes lands where
// the fixture looks. The report is provoked with SIGSEGV, which ASan's handler reports
// like a crash of its own. Skipped outside the sanitized run.
#include <signal.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using shim::test::PrivateContainerd;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The reports written so far, waiting up to `timeout` for the first.
std::vector<shim::test::SanitizerReport> wait_for_reports(PrivateContainerd& fx,
                                                          std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Taken only once the report is complete: ASan ends it with its SUMMARY line.
    auto reports = shim::test::read_sanitizer_reports(fx.sanitizer_dir(), false);
    bool complete = !reports.empty() && reports.back().text.find("SUMMARY: ") != std::string::npos;
    if (complete || std::chrono::steady_clock::now() >= deadline) return fx.take_sanitizer_reports();
    std::this_thread::sleep_for(50ms);
  }
}

// Checks that `pid` runs `binary` with the fixture's sanitizer options, makes it report,
// and takes the report (so that the fixture does not fail the test for it).
void check_reports_reach_the_fixture(PrivateContainerd& fx, int pid, const std::string& binary) {
  INFO("shim daemon " << pid);
  CHECK(fs::read_symlink(fmt::format("/proc/{}/exe", pid)) == fs::canonical(binary));
  std::string environ = slurp(fmt::format("/proc/{}/environ", pid));
  CHECK(environ.find(fmt::format("ASAN_OPTIONS=log_path={}/report:", fx.sanitizer_dir())) != std::string::npos);
  CHECK(environ.find(fmt::format("UBSAN_OPTIONS=log_path={}/report:", fx.sanitizer_dir())) != std::string::npos);
  CHECK(fx.take_sanitizer_reports().empty());

  REQUIRE(::kill(pid, SIGSEGV) == 0);
  auto reports = wait_for_reports(fx, 20s);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].path == fmt::format("{}/report.{}", fx.sanitizer_dir(), pid));
  CHECK(reports[0].text.find("ERROR: AddressSanitizer: SEGV") != std::string::npos);
  CHECK(reports[0].text.find("SUMMARY: AddressSanitizer: SEGV") != std::string::npos);
}

}  // namespace

TEST_CASE("a sanitized shim-runc daemon's report reaches the fixture", "[sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (!shim::test::sanitized_shim_build_dir()) LIBSHIM_SKIP("not the sanitized run");
  shim::test::RuncE2e e;
  REQUIRE(e.fx.ctr_ok(e.run({"-d"}, "s1", {"/bin/sleep", "600"})).ok());
  auto shims = shim::test::live_shims(shim::test::our_runc_shim(), e.fx.ns());
  REQUIRE(shims.size() == 1);
  check_reports_reach_the_fixture(e.fx, shims[0], shim::test::our_runc_shim());
}

TEST_CASE("a sanitized shim-example daemon's report reaches the fixture", "[sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  if (!shim::test::sanitized_shim_build_dir()) LIBSHIM_SKIP("not the sanitized run");
  PrivateContainerd fx;
  const std::string rootfs = fx.dir() + "/rootfs";
  shim::test::make_busybox_rootfs(rootfs);
  const std::string binary =
      fs::canonical(shim::test::shim_build_dir() + "/shim-example/containerd-shim-example-v1").string();
  std::vector<std::string> run = {"run", "-d", "--runtime", binary};
  for (const auto& flag : fx.run_flags(/*with_runc_root=*/false)) run.push_back(flag);
  run.insert(run.end(), {"--rootfs", rootfs, "x1", "/bin/sleep", "600"});
  REQUIRE(fx.ctr_ok(run).ok());
  auto shims = shim::test::live_shims(binary, fx.ns());
  REQUIRE(shims.size() == 1);
  check_reports_reach_the_fixture(fx, shims[0], binary);
}
