// MountCapabilities: the mount types and transforms a shim performs itself, so that
// containerd's mount manager leaves them to it. A VM shim, for example, hands an erofs
// image or a raw block device to its guest rather than having containerd set up a loop
// device and mount it on the host.
//
// A Manager declares them in Manager::mount_capabilities() (shim/manager.h); libshim
// tells containerd in the form each release reads:
//   containerd 2.4 (PR #14002): an extension of the `start` answer, the
//     containerd.types.MountCapabilities message (api/types/mount.proto) in
//     BootstrapResult.extensions (api/runtime/bootstrap/v1/bootstrap.proto), read by
//     core/runtime/v2/task_mounts.go before the task's mounts are activated. Also in the
//     JSON answer, which 2.4 decodes whole (core/runtime/v2/shim.go parseStartResponse).
//   containerd 2.2, 2.3 and 2.4.0-beta.0: the `-info` answer's annotation
//     containerd.io/runtime-allow-mounts ("erofs,loop,format/*"), which containerd asks
//     for once per runtime name at the first Create, except for io.containerd.runc.v2
//     and io.containerd.runhcs.v1 (core/runtime/v2/shim_manager.go loadShimInfo).
//   containerd 1.6 - 2.1 have no mount manager and read neither.
//
// Threading: a plain value, built on the main thread of the action that asks for it.
#pragma once

#include <string>
#include <vector>

namespace shim {

struct MountCapabilities {
  // Base mount types the shim mounts itself ("erofs", "loop", "ext4"), without any
  // transform prefix.
  std::vector<std::string> types;
  // Transforms the shim applies itself, each named alone ("format", "mkfs", "mkdir"):
  // "format" covers the mount types "format/bind" and "format/mkdir/overlay" alike.
  std::vector<std::string> transforms;
};

// The -info annotation that carries them for containerd 2.2 - 2.4.0-beta.0.
inline constexpr const char* kRuntimeAllowMountsAnnotation = "containerd.io/runtime-allow-mounts";

}  // namespace shim
