// What containerd writes on the stdin of `start` (core/runtime/v2/binary.go, api/runtime/bootstrap/v1/bootstrap.proto):
//   1.6 - 2.2: nothing, or a proto google.protobuf.Any holding the runtime options;
//   2.3+:      a proto containerd.runtime.bootstrap.v1.BootstrapParams with the options
//              as an Extension (the legacy Any only for *shim-runc-v1 / *shim-runhcs-v1).
// Decoding never fails `start`: bytes that fit no form are reported as kUnknown, with a
// reason worth logging, and no options (a 1.6 Go shim failing here is the lesson).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shim/pb/containerd/bootstrap.pb.h"
#include "shim/pb/any.pb.h"

namespace shim {

namespace bootstrap_v1 = containerd::runtime::bootstrap::v1;

// The Go shim reads at most this much of stdin (10 MiB).
inline constexpr std::size_t kMaxStartStdinBytes = std::size_t{10} << 20;

enum class StartInputKind {
  kEmpty,            // no stdin: no options; everything comes from flags and env
  kLegacyAny,        // google.protobuf.Any (1.6 - 2.2)
  kBootstrapParams,  // BootstrapParams (2.3+)
  kUnknown,          // neither; see `reason`
};

std::string_view start_input_kind_name(StartInputKind kind);

struct StartInput {
  StartInputKind kind = StartInputKind::kEmpty;
  // Why the bytes are kUnknown, or why no options were picked from a valid message.
  std::string reason;

  // The runtime options: the legacy Any, or the first extension (of a wanted type when
  // wanted types were given).
  std::optional<shim::pb::Any> options;
  // Every Any received: the legacy Any, or each extension's value in order.
  std::vector<shim::pb::Any> all_options;

  // Set only for kBootstrapParams.
  std::string instance_id;
  std::string ns;
  bootstrap_v1::LogLevel log_level = bootstrap_v1::LOG_LEVEL_INFO;
  std::string containerd_version;
  std::string ttrpc_address;
  std::string grpc_address;
  std::string containerd_binary;
  std::optional<std::string> socket_dir;

  // BootstrapParams asked for debug or trace logging (the Go shim then runs its daemon
  // with -debug). False for the other kinds: there -debug on the command line decides.
  bool debug_requested() const;
};

// Classifies and decodes the whole stdin of `start`.
//
// Detection: a legacy Any only ever has fields 1 (type_url) and 2 (value), both
// length-delimited; BootstrapParams from containerd always carries field 4
// (containerd_version) and/or 5 (ttrpc address). Because an Any whose value happens to
// be valid UTF-8 also parses "successfully" as BootstrapParams (type_url as instance_id),
// the raw fields are inspected first: any field >= 3 means BootstrapParams, only fields
// 1/2 mean Any. UTF-8 of proto3 strings is checked before the generated parser runs, so
// bad input never makes libprotobuf log to stderr (stderr of `start` reaches containerd).
//
// `wanted_type_urls`, when not empty, restricts `options` to an Any whose type matches
// one of them (see same_type_url), e.g. {"containerd.runc.v1.Options"}.
StartInput classify_start_stdin(std::string_view bytes,
                                const std::vector<std::string>& wanted_type_urls = {});

// Type URLs name the same type when the parts after their last '/' are equal:
// containerd's typeurl writes "containerd.runc.v1.Options" while protobuf's Any.Pack
// writes "type.googleapis.com/containerd.runc.v1.Options".
bool same_type_url(std::string_view a, std::string_view b);

}  // namespace shim
