#include "shim/oci/cli_info.h"

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include "shim/oci/runc_options.h"
#include "shim/oci/cli_client.h"
#include "shim/oci/cli_command.h"
#include "gocompat/go_compat.h"

namespace shim::oci {

shim::Status features_any(std::string_view runc_output, shim::pb::Any* any) {
  boost::system::error_code ec;
  boost::json::value features = boost::json::parse(runc_output, ec);
  if (ec || !features.is_object()) return shim::invalid_argument("runtime features are not a JSON object");
  any->set_type_url(std::string(kFeaturesType));
  any->set_value(shim::go_json_marshal(features));
  return {};
}

shim::Status cli_runtime_info(const shim::ActionContext& context, const std::optional<shim::pb::Any>& options,
                              containerd::types::RuntimeInfo* info, std::string_view default_binary) {
  std::string binary(default_binary);
  if (options) {
    DecodedOptions decoded;
    if (shim::Status s = decode_runc_options(*options, &decoded); !s.ok()) {
      return shim::unknown(fmt::format("failed to read runtime options (*options.Options): {}", s.message()));
    }
    if (decoded.present) {
      info->mutable_options()->set_type_url(std::string(kRuncOptionsType));
      info->mutable_options()->set_value(decoded.options.SerializeAsString());
      if (!decoded.options.binary_name().empty()) binary = decoded.options.binary_name();
    }
  }
  std::string path;
  if (shim::Status s = shim::go_look_path(binary, &path); !s.ok()) {
    return shim::unknown(fmt::format("failed to look up the path of \"{}\": {}", binary, s.message()));
  }
  std::string json;
  if (!cli_features(context.reaper, context.spawner, path, &json).ok()) return {};
  shim::pb::Any features;
  if (features_any(json, &features).ok()) *info->mutable_features() = std::move(features);
  return {};
}

}  // namespace shim::oci
