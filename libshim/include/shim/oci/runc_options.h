// The runc shim's runtime options (containerd.runc.v1.Options, runtime/v2/runc/options/oci.proto in 1.6,
// api/types/runc/options/oci.proto in 2.x): decoded
// from the Any containerd sends, and kept in the bundle as the Go shim keeps them, so the
// `delete` action and a restarted shim find the same runc root and binary:
//   <bundle>/options.json  json.Marshal of the Go struct: snake_case keys in field order,
//                          zero values omitted, e.g. {"root":"/tmp/x"} (mode 0600)
//   <bundle>/runtime       the binary name, "" meaning runc (mode 0600, no newline)
#pragma once

#include <string>
#include <string_view>

#include "shim/pb/runc/runc_options.pb.h"
#include "shim/pb/any.pb.h"
#include "shim/status.h"

namespace shim::oci {

// The runtime options containerd sends a runc-type shim (CRI: the handler's `options`).
using RuncOptions = containerd::runc::v1::Options;

// Their type URL, as containerd writes it (a "<prefix>/" before it is accepted too).
inline constexpr std::string_view kRuncOptionsType = "containerd.runc.v1.Options";

// What decode_runc_options() made of an Any.
struct DecodedOptions {
  RuncOptions options;  // all defaults unless `present`
  bool present = false;  // the Any held containerd.runc.v1.Options
  // Non-empty when the Any was not used, or not fully: say so in the log.
  std::string note;
};

// Decodes the runtime options Any. Its type_url may be bare or carry any "<prefix>/"
// (e.g. type.googleapis.com/). An empty type_url, or any other type (runtimeoptions.v1,
// containerd.linux.runc.CreateOptions, ...), means "no runc options": OK, with a note.
// The only error: a runc Options type whose bytes do not decode (the Go shim fails Create
// then; `start` may ignore it). `out` is filled in every case.
shim::Status decode_runc_options(const shim::pb::Any& any, DecodedOptions* out);

// The bytes the Go shim writes to options.json for `options`.
std::string options_json(const RuncOptions& options);
// Decodes options.json content like Go's json.Unmarshal into the Go struct: keys matched
// case-insensitively, unknown keys ignored, null skipped, a wrong JSON type an error.
shim::Status parse_options_json(std::string_view json, RuncOptions* options);

// <bundle>/options.json and <bundle>/runtime.
shim::Status write_options(const std::string& bundle, const RuncOptions& options);
shim::Status write_runtime(const std::string& bundle, std::string_view binary_name);

// Reads <bundle>/options.json. A missing file is not an error: *present = false and
// default options (the Go shim's ReadOptions returns nil then).
shim::Status read_options(const std::string& bundle, RuncOptions* options, bool* present);
// Reads <bundle>/runtime. Missing: NotFound "open <path>: no such file or directory" (the
// 1.6 Go shim fails `delete` with it; 2.x treats it as "runc": the caller chooses).
shim::Status read_runtime(const std::string& bundle, std::string* binary_name);

// Options.root, or /run/containerd/runc when empty.
std::string runc_root(const RuncOptions& options);

}  // namespace shim::oci
