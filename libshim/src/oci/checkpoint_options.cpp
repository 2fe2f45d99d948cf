#include "shim/oci/checkpoint_options.h"

#include <fmt/format.h>

#include "gocompat/go_compat.h"

namespace shim::oci {

namespace {

std::string_view type_name(std::string_view type_url) {
  std::size_t slash = type_url.rfind('/');
  return slash == std::string_view::npos ? type_url : type_url.substr(slash + 1);
}

}  // namespace

shim::Status decode_checkpoint_options(const shim::pb::Any& any, CheckpointOptions* out) {
  out->Clear();
  if (any.type_url().empty()) return {};
  if (type_name(any.type_url()) != kCheckpointOptionsType) {
    return shim::not_found(fmt::format("type with url {}", any.type_url()));
  }
  if (!out->ParseFromString(any.value())) {
    out->Clear();
    return shim::unknown(fmt::format("unmarshal {}: invalid protobuf ({} bytes)", any.type_url(),
                                     any.value().size()));
  }
  return {};
}

CheckpointArgs checkpoint_args(std::string_view image_path, const CheckpointOptions& options) {
  CheckpointArgs args;
  args.image_path = std::string(image_path);
  args.work_path = options.work_path();
  args.parent_path = options.parent_path();
  args.open_tcp = options.open_tcp();
  args.external_unix_sockets = options.external_unix_sockets();
  args.terminal = options.terminal();
  args.file_locks = options.file_locks();
  args.empty_namespaces.assign(options.empty_namespaces().begin(),
                               options.empty_namespaces().end());
  args.leave_running = !options.exit();
  return args;
}

RestoreArgs restore_args(std::string_view bundle, const RuncOptions& options,
                         std::string_view checkpoint, std::string_view parent_checkpoint) {
  RestoreArgs args;
  args.image_path = std::string(checkpoint);
  args.work_path = options.criu_work_path().empty() ? shim::go_join_path(bundle, "work")
                                                    : options.criu_work_path();
  args.parent_path = std::string(parent_checkpoint);
  args.no_pivot = options.no_pivot_root();
  return args;
}

}  // namespace shim::oci
