// Checkpoint / restore inputs as the Go runc shim reads them (containerd pkg/process/init.go, runtime/v2/runc/options/oci.proto):
// the containerd.runc.v1.CheckpointOptions Any of a Checkpoint request, and what a Create
// with `checkpoint` set keeps for the restore at Start. Pure, so the mapping to the runc
// command lines (shim/oci/cli_command.h) is unit-tested without runc or CRIU.
#pragma once

#include <string>
#include <string_view>

#include "shim/pb/runc/runc_options.pb.h"
#include "shim/pb/any.pb.h"
#include "shim/oci/runc_options.h"
#include "shim/oci/cli_command.h"
#include "shim/status.h"

namespace shim::oci {

// The options of a Checkpoint request for a runc-type shim (`ctr task checkpoint`, CRI).
using CheckpointOptions = containerd::runc::v1::CheckpointOptions;

// Their type URL, as containerd writes it.
inline constexpr std::string_view kCheckpointOptionsType = "containerd.runc.v1.CheckpointOptions";

// Decodes CheckpointRequest.options. An empty type_url means defaults (containerd sends no
// options when its client gave none). The type_url may be bare or carry any "<prefix>/".
// Errors: another type -> NotFound "type with url <url>: not found" (the text Go's typeurl
// gives for a type it does not know); bytes that do not decode -> Unknown. `out` is
// cleared first.
shim::Status decode_checkpoint_options(const shim::pb::Any& any, CheckpointOptions* out);

// What the Go shim hands to `runc checkpoint` for a request with image dir `image_path`:
// open_tcp, external_unix_sockets, terminal (--shell-job), file_locks, empty_namespaces,
// work_path, parent_path (2.4+; 1.6 containerd never sets it) and --leave-running unless
// `exit`. cgroups_mode and the options' image_path are not forwarded (as in Go). An empty
// work_path stays empty: CliClient::checkpoint then uses <bundle>/work/criu-work and
// removes it afterwards.
CheckpointArgs checkpoint_args(std::string_view image_path, const CheckpointOptions& options);

// The `runc restore` arguments fixed at Create (Go's createCheckpointedState): image dir
// `checkpoint`, parent `parent_checkpoint`, work dir Options.criu_work_path or else
// <bundle>/work, --no-pivot from Options.no_pivot_root. The console socket is added at
// Start.
RestoreArgs restore_args(std::string_view bundle, const RuncOptions& options,
                         std::string_view checkpoint, std::string_view parent_checkpoint);

}  // namespace shim::oci
