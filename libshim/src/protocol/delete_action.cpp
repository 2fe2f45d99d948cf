// The `delete` action: the plug-in's cleanup after a task whose shim may be gone, then
// only a containerd.task.v2.DeleteResponse on stdout (containerd decodes it with the v2
// message in every release). Warnings go to stderr, which containerd logs.
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "common/vendor_call.h"
#include "protocol/action_setting.h"
#include "protocol/actions.h"
#include "protocol/shim_sharing.h"
#include "shim/fs.h"
#include "shim/process/call_deadline.h"
#include "socket/grouping.h"
#include "socket/socket_address.h"
#include "socket/unix_listener.h"

namespace shim::detail {
namespace {

constexpr std::string_view kUnixScheme = "unix://";

// containerd kills `delete` after 5 s (cleanupTimeout) and then keeps the bundle and
// publishes exit status 255 (core/runtime/v2/shim.go cleanupAfterDeadShim; 2.4 says
// "shim killed after context deadline exceeded", binary.go shimCallError). Runtime
// commands end 3 s after the action began; the rest is for the unmount and the answer.
constexpr std::chrono::milliseconds kDeleteRuntimeBudget{3000};

// The socket `start` gave the shim of this task: the bundle's `address` file (written by
// start, also for a reused group shim), else computed again as start did (group from
// config.json, or the task id without one, default socket dir).
Status shim_socket_path(const ShimIdentity& context, Manager& manager, std::string* path) {
  std::string address;
  if (read_file(context.bundle + "/address", &address).ok()) {
    while (!address.empty() && (address.back() == '\n' || address.back() == ' '))
      address.pop_back();
  } else {
    StartContext start;
    start.id = context.id;
    start.ns = context.ns;
    start.bundle = context.bundle;
    start.grpc_address = context.grpc_address;
    start.socket_dir = std::string(kDefaultSocketDir);
    std::string group;
    DaemonOptions options;
    if (Status s = daemon_options_of(manager, start, &options); !s.ok()) return s;
    // As start chose, as far as the delete action can know (no SCHED_CORE here; the
    // runtime options' shim cgroup unknown): a live shim's socket is never removed.
    std::string shared_key = options.shared_group.empty() ? "" : shared_group_key(options);
    if (Status s = bundle_group_id(context.bundle, context.id, &group, options.group_annotations,
                                   shared_key);
        !s.ok()) {
      return s;
    }
    if (Status s = socket_address(context.grpc_address, context.ns, group, &address); !s.ok()) {
      return s;
    }
  }
  if (!address.starts_with(kUnixScheme)) {
    return invalid_argument(fmt::format("shim address {} is not unix://", address));
  }
  *path = address.substr(kUnixScheme.size());
  return {};
}

// containerd runs `delete` after the shim died: without this its socket would stay in
// /run/containerd/s for good (the Go shim leaves it). A warning on stderr, which
// containerd logs, never a failed delete: the task cleanup matters more.
void remove_socket_of_dead_shim(const ActionContext& context, Manager& manager) {
  std::string path;
  bool removed = false;
  Status s = shim_socket_path(context.identity, manager, &path);
  if (s.ok()) s = remove_dead_socket(path, &removed);
  if (!s.ok())
    context.logger.warn("shim socket not removed",
                        {{"id", context.identity.id}, {"error", s.message()}});
}

}  // namespace

// The plug-in's clean-up first; the socket is removed whatever it answered.
int run_delete(const ShimFlags& flags, const ShimEnv& env, Manager& manager) {
  const auto began = std::chrono::steady_clock::now();
  ShimIdentity identity{.ns = !flags.ns.empty() ? flags.ns : env.ns,
                        .id = flags.id,
                        .bundle = !flags.bundle.empty() ? flags.bundle : current_dir(),
                        .grpc_address = !flags.address.empty() ? flags.address : env.grpc_address,
                        .ttrpc_address = env.ttrpc_address,
                        .debug = flags.debug};
  if (identity.ns.empty())
    return fail(manager, Status(Code::kInvalidArgument, "shim namespace cannot be empty"));
  ActionSetting setting("delete", std::move(identity), began + kDeleteRuntimeBudget);
  if (Status s = setting.status(); !s.ok()) return fail(manager, s);
  ActionContext& context = setting.context();

  task::DeleteResponse response;
  Status stopped;
  {
    CallDeadlineScope bounded(context.deadline);  // kills a hanging runtime command
    stopped = vendor_call(
        "Manager::stop", [&] { return manager.stop(context, &response); }, &context.logger,
        context.identity.id);
  }
  remove_socket_of_dead_shim(context, manager);
  if (!stopped.ok()) return fail(manager, stopped);
  return write_fd(STDOUT_FILENO, response.SerializeAsString()) ? 0 : 1;
}

}  // namespace shim::detail
