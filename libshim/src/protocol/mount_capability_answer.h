// What libshim makes of a Manager's MountCapabilities (shim/mount_capabilities.h): the
// BootstrapResult extension containerd 2.4 reads (core/runtime/v2/task_mounts.go
// mountClaimOpts) and the -info annotation of containerd 2.2 - 2.4.0-beta.0
// (core/runtime/v2/shim_manager.go loadShimInfo, task_manager.go Create).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shim/manager.h"
#include "shim/mount_capabilities.h"
#include "shim/pb/any.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "shim/status.h"

namespace shim::detail {

// The type URL Go's anypb.New writes (the Go helper BootstrapResult.AddExtension uses
// it); containerd matches the part after the last '/' (anypb MessageIs).
inline constexpr std::string_view kMountCapabilitiesTypeUrl =
    "type.googleapis.com/containerd.types.MountCapabilities";

// InvalidArgument naming the first bad entry: empty, not UTF-8, holding ',' (the
// annotation's separator), '/' (types are base types, transforms named alone), white
// space or a control character (2.3.0 - 2.3.3 trim the answer before decoding it).
Status check_mount_capabilities(const MountCapabilities& capabilities);

// The extension's value: an Any holding containerd.types.MountCapabilities.
shim::pb::Any mount_capabilities_any(const MountCapabilities& capabilities);

// The annotation's value: the types, then each transform as "<transform>/*" (the form
// containerd 2.2 - 2.4.0-beta.0's mount manager matched), comma-separated.
std::string runtime_allow_mounts(const MountCapabilities& capabilities);

// manager.mount_capabilities(options), guarded (common/vendor_call.h) and checked.
Status mount_capabilities_of(const Manager& manager, const std::optional<shim::pb::Any>& options,
                             std::optional<MountCapabilities>* capabilities);

// The `start` answer's extensions for runtime options `options`: the capabilities'
// Any when the Manager declares some, else none.
Status start_answer_extensions(const Manager& manager, const std::optional<shim::pb::Any>& options,
                               std::vector<shim::pb::Any>* extensions);

// -info: sets the annotation on `info` when the Manager declares capabilities with
// something in them, unless info() set it already.
Status annotate_runtime_info(const Manager& manager, const std::optional<shim::pb::Any>& options,
                             containerd::types::RuntimeInfo* info);

}  // namespace shim::detail
