// `start`'s stdin detection: classify_start_stdin on any bytes (empty, a legacy Any,
// BootstrapParams, garbage). Checked:
//  - libprotobuf never logs: bootstrap.h promises that bad input is caught before the
//    generated parsers run, because `start`'s stderr reaches containerd;
//  - the kind and the fields agree (kUnknown has a reason and no options; the legacy Any
//    is the whole input; the picked options are one of those received and of a wanted
//    type); restricting the wanted types changes the options only;
//  - the start answer built from the decoded strings reads back the same in the
//    containerd release that reads that format (the tests' model of containerd's
//    reading, tests/support/start_answer_oracle.h).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "fuzz_check.h"
#include "protobuf_log.h"
#include "protocol/bootstrap.h"
#include "protocol/start_answer.h"
#include "support/start_answer_oracle.h"

namespace {

using shim::StartInput;
using shim::StartInputKind;

void check_consistent(std::string_view bytes, const StartInput& input) {
  if (bytes.empty()) FUZZ_CHECK(input.kind == StartInputKind::kEmpty);
  switch (input.kind) {
    case StartInputKind::kEmpty:
      FUZZ_CHECK(bytes.empty());
      break;
    case StartInputKind::kUnknown:
      FUZZ_CHECK(!input.reason.empty());
      FUZZ_CHECK(input.all_options.empty() && !input.options);
      break;
    case StartInputKind::kLegacyAny: {
      FUZZ_CHECK(input.all_options.size() == 1);
      shim::pb::Any reparsed;
      FUZZ_CHECK(reparsed.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
      FUZZ_CHECK(reparsed.type_url() == input.all_options[0].type_url());
      FUZZ_CHECK(reparsed.value() == input.all_options[0].value());
      break;
    }
    case StartInputKind::kBootstrapParams:
      break;
  }
  if (input.kind != StartInputKind::kBootstrapParams) {
    FUZZ_CHECK(input.instance_id.empty() && input.ttrpc_address.empty() && !input.socket_dir);
    FUZZ_CHECK(!input.debug_requested());
  }
}

void check_options(const StartInput& input, const std::vector<std::string>& wanted) {
  if (!input.options) return;
  bool received = false;
  for (const shim::pb::Any& any : input.all_options) {
    received = received || (any.type_url() == input.options->type_url() &&
                            any.value() == input.options->value());
  }
  FUZZ_CHECK(received);
  bool matches = wanted.empty();
  for (const std::string& type : wanted) matches = matches || shim::same_type_url(input.options->type_url(), type);
  FUZZ_CHECK(matches);
}

bool trimmed(std::string_view text) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  return !text.empty() && !space(text.front()) && !space(text.back());
}

// format_start_answer, then parse_start_answer as the release that reads that format.
void check_answer_round_trip(const StartInput& input) {
  using shim::ContainerdRelease;
  using shim::StartAnswerFormat;
  const std::string& address = input.ttrpc_address;
  const std::string& protocol = input.containerd_version;
  const int version = static_cast<int>(input.log_level);
  if (!trimmed(address) || !trimmed(protocol)) return;
  struct Case {
    StartAnswerFormat format;
    ContainerdRelease reader;
    int version;
  };
  for (Case c : {Case{StartAnswerFormat::kJsonV2, ContainerdRelease::k1_7, 2},
                 Case{StartAnswerFormat::kJsonV3, ContainerdRelease::k2_0, 3},
                 Case{StartAnswerFormat::kProtoBootstrapResult, ContainerdRelease::k2_3, version}}) {
    std::string bytes;
    if (!shim::format_start_answer(c.format, address, version, protocol, &bytes).ok()) continue;
    shim::StartAnswer answer;
    shim::Status parsed = shim::parse_start_answer(bytes, c.reader, &answer);
    // A version the reader does not support is its error to give.
    if (!parsed.ok()) continue;
    FUZZ_CHECK(answer.address == address);
    FUZZ_CHECK(answer.protocol == protocol);
    FUZZ_CHECK(answer.version == c.version);
    FUZZ_CHECK(answer.decoded_as_proto == (c.format == StartAnswerFormat::kProtoBootstrapResult));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(&fuzz::abort_on_protobuf_log);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  StartInput input = shim::classify_start_stdin(bytes);
  check_consistent(bytes, input);
  check_options(input, {});

  const std::vector<std::string> wanted = {"containerd.runc.v1.Options"};
  StartInput restricted = shim::classify_start_stdin(bytes, wanted);
  FUZZ_CHECK(restricted.kind == input.kind);
  FUZZ_CHECK(restricted.all_options.size() == input.all_options.size());
  FUZZ_CHECK(restricted.instance_id == input.instance_id);
  check_options(restricted, wanted);

  if (input.kind == StartInputKind::kBootstrapParams) check_answer_round_trip(input);
  return 0;
}
