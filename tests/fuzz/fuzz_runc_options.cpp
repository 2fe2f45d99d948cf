// shim-runc's runtime options as containerd sends them and as the bundle keeps them.
// The input is used twice:
//  - as a serialized google.protobuf.Any: decode_runc_options and
//    decode_checkpoint_options, then the runc command lines built from what they give
//    (CliCommandLine, checkpoint_args, restore_args). Runc Options that decode are
//    written as options.json (options_json) and must read back (parse_options_json) to
//    the same options;
//  - as the text of <bundle>/options.json: parse_options_json; what it accepts must
//    write and read back unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "fuzz_check.h"
#include "shim/oci/checkpoint_options.h"
#include "shim/oci/runc_options.h"
#include "shim/oci/cli_command.h"

namespace {

using shim::oci::RuncOptions;

void check_json_round_trip(const RuncOptions& options) {
  std::string json = shim::oci::options_json(options);
  RuncOptions back;
  shim::Status status = shim::oci::parse_options_json(json, &back);
  FUZZ_CHECK(status.ok());
  FUZZ_CHECK(shim::oci::options_json(back) == json);
  // Unknown fields (lite keeps them, serialized after the known ones) are not in the Go
  // struct, so not in options.json: the known fields must be the same.
  FUZZ_CHECK(options.SerializeAsString().starts_with(back.SerializeAsString()));
}

void check_command_lines(const RuncOptions& options, const shim::oci::CheckpointOptions& checkpoint) {
  shim::oci::CliConfig config{options.binary_name(), shim::oci::runc_root(options), "ns", "/bundle",
                               options.systemd_cgroup()};
  config.criu = options.criu_path();
  shim::oci::CliCommandLine runc(config);
  FUZZ_CHECK(!runc.binary().empty());
  FUZZ_CHECK(runc.create("id", {.no_pivot = options.no_pivot_root(),
                                .no_new_keyring = options.no_new_keyring()})
                 .front() == runc.binary());
  shim::oci::CheckpointArgs args = shim::oci::checkpoint_args("/image", checkpoint);
  FUZZ_CHECK(args.leave_running == !checkpoint.exit());
  FUZZ_CHECK(runc.checkpoint("id", args).back() == "id");
  shim::oci::RestoreArgs restore = shim::oci::restore_args("/bundle", options, "/image", "");
  FUZZ_CHECK(!restore.work_path.empty());
  FUZZ_CHECK(runc.restore("id", restore).back() == "id");
}

void as_any(std::string_view bytes) {
  shim::pb::Any any;
  if (!any.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  shim::oci::DecodedOptions decoded;
  shim::Status status = shim::oci::decode_runc_options(any, &decoded);
  if (!status.ok()) {
    FUZZ_CHECK(!decoded.present);
    FUZZ_CHECK(!decoded.note.empty());
  }
  if (decoded.present) check_json_round_trip(decoded.options);
  shim::oci::CheckpointOptions checkpoint;
  if (!shim::oci::decode_checkpoint_options(any, &checkpoint).ok()) checkpoint.Clear();
  check_command_lines(decoded.options, checkpoint);
}

void as_json(std::string_view text) {
  RuncOptions options;
  if (!shim::oci::parse_options_json(text, &options).ok()) return;
  check_json_round_trip(options);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Bad UTF-8 in a proto3 string makes libprotobuf log; it only fails the decode.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  as_any(bytes);
  as_json(bytes);
  return 0;
}
