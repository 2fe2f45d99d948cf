// The io.libshim.output.* annotations of a container's OCI spec, which set its output
// buffer (docs/output-buffering.md) over the shim's default:
//   io.libshim.output.buffer-bytes  memory per stream: bytes, or with a Ki/Mi/Gi suffix
//   io.libshim.output.spill-bytes   spill file per stream, the same syntax (0: none)
//   io.libshim.output.overflow      block | drop
#pragma once

#include <string>

#include <boost/json/object.hpp>

#include "shim/status.h"
#include "shim/stdio/process_io.h"

namespace shim::stdio {

inline constexpr const char* kOutputBufferBytesAnnotation = "io.libshim.output.buffer-bytes";
inline constexpr const char* kOutputSpillBytesAnnotation = "io.libshim.output.spill-bytes";
inline constexpr const char* kOutputOverflowAnnotation = "io.libshim.output.overflow";

// Upper limits of the two sizes: 1 GiB in memory, 64 GiB spilled (per stream).
inline constexpr std::uint64_t kMaxOutputBufferBytes = std::uint64_t{1} << 30;
inline constexpr std::uint64_t kMaxOutputSpillBytes = std::uint64_t{64} << 30;

// Applies the annotations of `spec` (an OCI spec; a missing or non-object "annotations"
// applies nothing) to `options`. InvalidArgument naming the annotation for a bad value,
// e.g. `annotation io.libshim.output.overflow: "later" is not block or drop`.
shim::Status apply_output_annotations(const boost::json::object& spec,
                                      OutputBufferOptions* options);

// Where a container's spill files go: <bundle>/work (containerd's link to the task's
// dir under its root, on disk) when it is a directory, else the bundle.
std::string output_spill_dir(const std::string& bundle);

}  // namespace shim::stdio
