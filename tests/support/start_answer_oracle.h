// A test oracle: containerd's reading of a shim's `start` output, per release (1.6
// runtime/v2/shim/util.go, 1.7 and 2.x core/runtime/v2/shim.go parseStartResponse, 2.x
// core/runtime/v2/binary.go Start), so the unit tests can check that every answer
// libshim prints is read as meant.
#pragma once

#include <string>
#include <string_view>

#include <vector>

#include "shim/pb/any.pb.h"
#include "shim/status.h"

namespace shim {

// Which containerd parses the answer; 2.0 - 2.2 share one parser. k2_3 is 2.3.0 - 2.3.3
// (the output is trimmed before the proto decode); k2_4 is 2.3.4 and 2.4 with PR #14002
// (proto on the raw output, and JSON decoded into the whole BootstrapResult).
enum class ContainerdRelease { k1_6, k1_7, k2_0, k2_3, k2_4 };

struct StartAnswer {
  int version = 0;  // as the reader ends up with it (1.7 leaves 0 for a plain address)
  std::string address;
  std::string protocol;
  bool decoded_as_proto = false;  // 2.3+ only: the bytes parsed as BootstrapResult
  // 2.4 only: BootstrapResult.extensions, from the proto or the JSON answer.
  std::vector<shim::pb::Any> extensions;
};

// Mirrors containerd's reading of `start` output (after its TrimSpace):
//   1.6: the whole output is the address;
//   1.7: JSON {version,address,protocol} if it decodes with version >= 2, else plain;
//        version > 2 -> Unimplemented "unsupported shim version (N): not implemented";
//   2.0-2.2: same with versions up to 3, plain means version 2;
//   2.3: proto BootstrapResult if the trimmed bytes decode as one, else as 2.0;
//   2.4: proto BootstrapResult if the untrimmed bytes decode as one (extensions kept),
//        else JSON into the whole BootstrapResult: also `extensions`, each
//        {"value":{"type_url":s,"value":<base64>}}; a mistyped member, bad base64 or
//        other members of BootstrapResult (capabilities, metadata) mistyped fail the
//        decode, and the whole output becomes the address.
// Go's encoding/json rules are followed: keys match case-insensitively, unknown keys are
// ignored, a mistyped field fails the decode but the other fields are still set (1.7
// then keeps that version).
Status parse_start_answer(std::string_view output, ContainerdRelease reader, StartAnswer* answer);

}  // namespace shim
