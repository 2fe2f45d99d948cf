// What `start` prints on stdout, and how each containerd release reads it
// (runtime/v2/shim.go in 1.6/1.7, core/runtime/v2/shim.go in 2.x).
//
// Why the plain address is the default for containerd 1.6 - 2.2: it is the only answer
// every release accepts. 1.6 dials the output verbatim (JSON would become an abstract
// socket name and fail), 1.7 rejects JSON version 3, and nothing in the environment
// tells 1.7 from 2.0 - 2.2 (MAX_SHIM_VERSION is 2 in all of them). A plain address is
// read as "version 2, ttrpc", which works because libshim serves containerd.task.v2.Task
// and containerd.task.v3.Task alike. The one caller that identifies itself is 2.3+: it
// sends BootstrapParams on stdin and reads a proto BootstrapResult first, so that is
// answered in kind. JSON is printed only when a plug-in asks for it (e.g. to report
// version 3 under 2.0 - 2.2 so CRI reuses the pod's shim without `start`), and never
// when the environment shows containerd 1.6.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/bootstrap.h"
#include "protocol/shim_env.h"
#include "shim/pb/any.pb.h"
#include "shim/status.h"

namespace shim {

enum class StartAnswerFormat {
  kPlainAddress,          // "unix:///run/containerd/s/<hex>", no newline
  kJsonV2,                // {"version":2,"address":"...","protocol":"ttrpc"} (1.7+)
  kJsonV3,                // {"version":3,...} (2.0+; 1.7 rejects it)
  kProtoBootstrapResult,  // containerd.runtime.bootstrap.v1.BootstrapResult (2.3+)
};

std::string_view start_answer_format_name(StartAnswerFormat format);

// BootstrapParams on stdin => proto (unless the plug-in asked for a plain address);
// otherwise the plain address, or the JSON format the plug-in requested when the
// environment shows containerd 1.7+. A requested proto answer without BootstrapParams
// falls back to plain: only 2.3+ reads proto. Under 1.7 a requested kJsonV3 fails the
// start; that is the plug-in's choice to make.
StartAnswerFormat choose_start_answer_format(
    StartInputKind stdin_kind, const ShimEnv& env,
    std::optional<StartAnswerFormat> requested = std::nullopt);

// The exact bytes to write to stdout. `version` and `protocol` ("ttrpc" or "grpc") go
// into the proto answer; the JSON formats carry the version their name says; the plain
// address carries neither (readers take it as version 2, ttrpc), so a protocol other
// than "ttrpc" is an error there. Strings must be valid UTF-8 (libprotobuf would log to
// stderr otherwise, and stderr of `start` is part of containerd's reading).
// The proto bytes start with the version tag (0x08) and end with the protocol, so
// containerd's TrimSpace of the output does not alter them.
// `extensions` (e.g. MountCapabilities, protocol/mount_capability_answer.h) go into the
// proto answer's field 6 after the protocol (a last byte of an Any's value may then be
// white space, but containerd 2.3+ tries proto.Unmarshal on the untrimmed output first)
// and into the JSON answers as Go's encoding/json writes BootstrapResult (key
// "extensions", each {"value":{"type_url":...,"value":<base64>}}, empty parts left
// out), which containerd 2.4 decodes whole and 1.7 - 2.3 ignore. The plain address
// cannot carry them.
Status format_start_answer(StartAnswerFormat format, std::string_view address, int version,
                           std::string_view protocol, std::string* bytes,
                           const std::vector<shim::pb::Any>& extensions = {});

}  // namespace shim
