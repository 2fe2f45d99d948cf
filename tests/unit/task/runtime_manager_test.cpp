// RuntimeManager's `delete` action around a plug-in's cleanup(): the answer containerd's
// shims give, and a failing or throwing cleanup that still lets the rootfs be unmounted.
#include <signal.h>
#include <sys/mount.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "shim/runtime_manager.h"
#include "support/action_context.h"
#include "support/temp_dir.h"

namespace {

// What cleanup() does, chosen by the test.
enum class Cleanup { kOk, kFails, kThrows };

class TestManager final : public shim::RuntimeManager {
 public:
  explicit TestManager(Cleanup cleanup) : cleanup_(cleanup) {}
  std::string name() const override { return "io.containerd.test.v1"; }
  std::unique_ptr<shim::Runtime> create_runtime(shim::ServiceContext&) override { return nullptr; }
  shim::Status cleanup(const shim::ActionContext& context, std::int64_t* init_pid) override {
    seen_id = context.identity.id;
    *init_pid = 42;
    if (cleanup_ == Cleanup::kThrows) throw std::runtime_error("state dir is gone");
    if (cleanup_ == Cleanup::kFails) return shim::unknown("runtime refused");
    return {};
  }
  std::string seen_id;

 private:
  Cleanup cleanup_;
};

bool mounted(const std::string& path) {
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mounts, line)) {
    if (line.find(" " + path + " ") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("RuntimeManager::stop: cleanup's pid, killed by SIGKILL, the rootfs unmounted",
          "[runtime-manager]") {
  const Cleanup cleanup = GENERATE(Cleanup::kOk, Cleanup::kFails, Cleanup::kThrows);
  shim::test::TempDir bundle("bundle-");
  const std::string rootfs = bundle.sub("rootfs");
  std::filesystem::create_directories(rootfs);
  REQUIRE(::mount("tmpfs", rootfs.c_str(), "tmpfs", 0, nullptr) == 0);
  REQUIRE(mounted(rootfs));
  shim::test::TestActionContext action(
      shim::ShimIdentity{.ns = "ns", .id = "c1", .bundle = bundle.path()});
  TestManager manager(cleanup);
  shim::task::DeleteResponse response;
  shim::Status status = manager.stop(action.get(), &response);
  CHECK(manager.seen_id == "c1");
  CHECK_FALSE(mounted(rootfs));  // whatever cleanup did
  if (cleanup == Cleanup::kOk) {
    REQUIRE(status.ok());
    CHECK(response.pid() == 42);
    CHECK(response.exit_status() == 128 + SIGKILL);
    CHECK(response.has_exited_at());
  } else if (cleanup == Cleanup::kFails) {
    CHECK(status.message() == "runtime refused");
  } else {
    CHECK(status.code() == shim::Code::kInternal);
    CHECK(status.message() == "RuntimeManager::cleanup threw: state dir is gone");
  }
  if (cleanup != Cleanup::kOk) {
    bool logged = false;
    for (const auto& line : action.lines())
      logged = logged || line.find("runtime clean-up failed") != std::string::npos;
    CHECK(logged);
  }
}
