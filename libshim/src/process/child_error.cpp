#include "process/child_error.h"

#include <cstring>

#include <fmt/format.h>

#include "linux/capability_names.h"
#include "linux/rlimit_names.h"

namespace shim::spawn {
namespace {

// The search candidate `index` of the report, else the request's path.
std::string exec_path(const ChildErrorContext& context, int index) {
  if (index >= 0 && static_cast<std::size_t>(index) < context.candidates.size()) {
    return context.candidates[static_cast<std::size_t>(index)];
  }
  return context.request.path;
}

// The steps of the process's own settings: "<step> <what>" where a report index says which.
std::string settings_step(const ChildErrorContext& context, const ChildReport& report) {
  const SpawnRequest& request = context.request;
  auto index = static_cast<std::size_t>(report.index);
  switch (report.step) {
    case ChildStep::kRlimit:
      return index < request.rlimits.size()
                 ? fmt::format("setrlimit {}", rlimit_name(request.rlimits[index].resource))
                 : "setrlimit";
    case ChildStep::kBoundingSet:
      return fmt::format("drop {} from the bounding set", capability_name(report.index));
    case ChildStep::kAmbientCaps:
      return report.index < 0 ? "clear ambient capabilities"
                              : fmt::format("raise ambient {}", capability_name(report.index));
    case ChildStep::kStdioOwner:
      return fmt::format("chown fd {} to uid {}", report.index,
                         request.user ? request.user->uid : 0);
    case ChildStep::kSetgroups:
    case ChildStep::kSetgid:
    case ChildStep::kSetuid:
      if (!request.user) break;
      return fmt::format("{} {}", step_name(report.step),
                         report.step == ChildStep::kSetuid ? request.user->uid : request.user->gid);
    default:
      break;
  }
  return std::string(step_name(report.step));
}

}  // namespace

std::string_view step_name(ChildStep step) {
  switch (step) {
    case ChildStep::kParentDeathSignal:
      return "set parent death signal";
    case ChildStep::kSession:
      return "setsid";
    case ChildStep::kProcessGroup:
      return "setpgid";
    case ChildStep::kJoinNamespaces:
      return "join namespaces";
    case ChildStep::kPrivateMounts:
      return "make mounts private";
    case ChildStep::kFds:
      return "map fds";
    case ChildStep::kCloseFds:
      return "close fds";
    case ChildStep::kRoot:
      return "chroot";
    case ChildStep::kChdir:
      return "chdir";
    case ChildStep::kMountProc:
      return "mount proc";
    case ChildStep::kMountDev:
      return "mount dev";
    case ChildStep::kSignalMask:
      return "reset signal mask";
    case ChildStep::kExec:
      return "exec";
    case ChildStep::kOomScoreAdj:
      return "write /proc/self/oom_score_adj";
    case ChildStep::kControllingTerminal:
      return "set controlling terminal (TIOCSCTTY)";
    case ChildStep::kRlimit:
      return "setrlimit";
    case ChildStep::kNoNewPrivileges:
      return "set no_new_privs";
    case ChildStep::kBoundingSet:
      return "drop from the bounding set";
    case ChildStep::kKeepCaps:
      return "set keep capabilities";
    case ChildStep::kStdioOwner:
      return "chown stdio";
    case ChildStep::kSetgroups:
      return "setgroups";
    case ChildStep::kSetgid:
      return "setgid";
    case ChildStep::kSetuid:
      return "setuid";
    case ChildStep::kCapset:
      return "capset";
    case ChildStep::kAmbientCaps:
      return "raise ambient capabilities";
    case ChildStep::kNotFound:
      return "look up the executable";
    case ChildStep::kFoundRelative:
      return "look up the executable";
    case ChildStep::kCgroup:
      return "join cgroup";
    case ChildStep::kJoinNamespaceFile:
      return "join namespace";
    case ChildStep::kHostname:
      return "sethostname";
    case ChildStep::kMount:
      return "mount";
    case ChildStep::kRemount:
      return "remount";
    case ChildStep::kPropagation:
      return "set propagation of";
    case ChildStep::kPivotRoot:
      return "pivot_root";
    case ChildStep::kReady:
    case ChildStep::kNone:
      break;
  }
  return "?";
}

Status child_error(const ChildErrorContext& context, const ChildReport& report) {
  const SpawnRequest& request = context.request;
  const char* reason = std::strerror(report.error);
  auto index = static_cast<std::size_t>(report.index);
  switch (report.step) {
    case ChildStep::kExec:
      return unknown(fmt::format("exec {}: {}", exec_path(context, report.index), reason));
    // Go's exec.LookPath texts, as runc returns them.
    case ChildStep::kNotFound:
      return unknown(fmt::format("exec: \"{}\": executable file not found in $PATH", request.path));
    case ChildStep::kFoundRelative:
      return unknown(fmt::format(
          "exec: \"{}\": cannot run executable found relative to current directory", request.path));
    case ChildStep::kChdir:
      return unknown(fmt::format("spawn {}: chdir {}: {}", request.path, request.cwd, reason));
    case ChildStep::kRoot:
      return unknown(fmt::format("spawn {}: chroot {}: {}", request.path, request.root, reason));
    case ChildStep::kFds:
      return unknown(fmt::format("spawn {}: map fd {} to child fd {}: {}", request.path,
                                 context.parent_fds.at(index), context.child_fds.at(index),
                                 reason));
    case ChildStep::kCgroup:
      return unknown(fmt::format("spawn {}: join cgroup {}: {}", request.path,
                                 index < static_cast<std::size_t>(context.cgroup_file_count)
                                     ? context.cgroup_files[index]
                                     : "?",
                                 reason));
    case ChildStep::kMount:
    case ChildStep::kRemount:
    case ChildStep::kPropagation:
      if (index >= request.mounts.size()) break;
      return unknown(fmt::format("spawn {}: {} {} {} at {}: {}", request.path,
                                 step_name(report.step), request.mounts[index].type,
                                 request.mounts[index].source, request.mounts[index].target,
                                 reason));
    case ChildStep::kPivotRoot:
      return unknown(
          fmt::format("spawn {}: pivot_root {}: {}", request.path, request.root, reason));
    case ChildStep::kMountDev:
      return unknown(fmt::format("spawn {}: mount dev at {}/dev (step {}): {}", request.path,
                                 request.root, report.index, reason));
    default:
      return unknown(
          fmt::format("spawn {}: {}: {}", request.path, settings_step(context, report), reason));
  }
  return unknown(fmt::format("spawn {}: {}: {}", request.path, step_name(report.step), reason));
}

}  // namespace shim::spawn
