// Helpers for end-to-end tests of our shim-runc under a private containerd: a fixture
// with our binary first on containerd's PATH (so io.containerd.runc.v2 resolves to it),
// ctr command lines, task status polling, live shim processes, and direct task API calls
// to a shim's socket.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/status.h"
#include "support/containerd_fixture.h"

namespace shim::test {

// Our containerd-shim-runc-v2 in this build tree, and its directory.
const std::string& our_runc_shim_dir();
const std::string& our_runc_shim();

enum class ShimUnderTest { kOurs, kGo };

// A private containerd (using our shim, or the Go shim that came with it) and a busybox
// rootfs in its dir.
struct RuncE2e {
  explicit RuncE2e(ShimUnderTest shim = ShimUnderTest::kOurs);

  // ctr run <flags...> <run_flags> --rootfs <rootfs> <id> <cmd...>
  std::vector<std::string> run(const std::vector<std::string>& flags, const std::string& id,
                               const std::vector<std::string>& cmd) const;
  // Task status as `ctr task ls` prints it ("" when not listed), and its pid (0 if none).
  std::string task_status(const std::string& id) const;
  pid_t task_pid(const std::string& id) const;
  bool wait_status(const std::string& id, const std::string& status,
                   std::chrono::milliseconds timeout) const;

  PrivateContainerd fx;
  std::string rootfs;
};

// Task status of `id` as `ctr task ls` prints it ("" when not listed), and a poll for one.
std::string task_status(const PrivateContainerd& fx, const std::string& id);
bool wait_task_status(const PrivateContainerd& fx, const std::string& id, const std::string& status,
                      std::chrono::milliseconds timeout);

// Live (non-zombie) processes whose executable is `binary` and whose command line has
// `-namespace <ns>`: the shim daemons of that namespace (the `start` helper exits fast).
std::vector<pid_t> live_shims(const std::string& binary, const std::string& ns);
bool wait_no_live_shims(const std::string& binary, const std::string& ns,
                        std::chrono::milliseconds timeout);

// The topics (in order) of the events about container `id`.
std::vector<std::string> event_topics_for(const EventsSubscriber& events, const std::string& id);

// The path part of a "unix:///path" address ("" for anything else).
std::string unix_path_of(const std::string& address);

struct TaskCallResult {
  Status status;
  std::string payload;
};

inline constexpr const char* kTaskServiceV2 = "containerd.task.v2.Task";
inline constexpr const char* kTaskServiceV3 = "containerd.task.v3.Task";

// The task service a containerd of `version` talks to shims: v3 from 2.0 on (the 2.x Go
// shim serves v3 only), else v2. Both have the same messages.
const char* task_service_for(const ContainerdVersion& version);

// One task API call on a fresh connection to `address`, with the namespace metadata
// containerd sends. Throws if the connection cannot be made or no answer comes within
// `timeout`.
TaskCallResult call_task_api(const std::string& address, const std::string& ns,
                             const std::string& method, const std::string& payload,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10),
                             const std::string& service = kTaskServiceV2);

// Connect(id) on the shim at `address`: nullopt if the call fails.
std::optional<containerd::task::v2::ConnectResponse> connect_task(const std::string& address,
                                                                  const std::string& ns,
                                                                  const std::string& id);

}  // namespace shim::test
