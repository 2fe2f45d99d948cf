// What a shim over a runc-compatible CLI answers to `-info` (containerd 2.x asks it for the runtime's
// features, e.g. CRI's recursive read-only mounts), as containerd's Go shim does in
// cmd/containerd-shim-runc-v2/manager/manager_linux.go (Info): the runtime options
// echoed, and `<BinaryName> features` as a runtime-spec Features Any.
#pragma once

#include <optional>
#include <string_view>

#include "shim/action_context.h"
#include "shim/oci/cli_command.h"
#include "shim/pb/any.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "shim/status.h"

namespace shim::oci {

// The type URL of the features Any (runtime-spec's Features, as containerd names it).
inline constexpr std::string_view kFeaturesType =
    "types.containerd.io/opencontainers/runtime-spec/1/features/Features";

// The features Any for `runc features` output: Go decodes it into the runtime-spec
// Features struct and marshals it again, so the value is that JSON in compact form (keys
// in the runtime's order, which is the struct's; strings quoted as encoding/json does).
// InvalidArgument if the output is not a JSON object.
shim::Status features_any(std::string_view runc_output, shim::pb::Any* any);

// Fills info->options and info->features the Go shim's way: runc Options from `options`
// are echoed (re-encoded) and name the binary (else `default_binary`), which must be
// found on PATH ("failed to look up the path of ..."); if `<binary> features` fails, the
// answer simply has no features (Go logs it at debug level: youki has no `features`).
shim::Status cli_runtime_info(const shim::ActionContext& context, const std::optional<shim::pb::Any>& options,
                              containerd::types::RuntimeInfo* info,
                              std::string_view default_binary = kDefaultCliBinary);

}  // namespace shim::oci
