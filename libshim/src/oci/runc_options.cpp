#include "shim/oci/runc_options.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include "shim/pb/runc/runtimeoptions.pb.h"
#include "gocompat/go_compat.h"
#include "shim/oci/cli_command.h"

namespace shim::oci {

namespace {

enum class FieldKind { kBool, kString, kUint32 };

// One field of the Go struct: its json tag and how to get/set it on the proto.
struct Field {
  std::string_view name;
  FieldKind kind;
  std::function<bool(const RuncOptions&)> is_zero;
  std::function<std::string(const RuncOptions&)> json_value;  // not called when zero
  std::function<void(RuncOptions*, const boost::json::value&)> assign;
};

template <class Get, class Set>
Field bool_field(std::string_view name, Get get, Set set) {
  return {name, FieldKind::kBool, [get](const RuncOptions& o) { return !(o.*get)(); },
          [](const RuncOptions&) { return std::string("true"); },
          [set](RuncOptions* o, const boost::json::value& v) { (o->*set)(v.get_bool()); }};
}

// Strings are set through mutable_x(): set_x() is a template in generated code.
template <class Get, class Mutable>
Field string_field(std::string_view name, Get get, Mutable mut) {
  return {name, FieldKind::kString, [get](const RuncOptions& o) { return (o.*get)().empty(); },
          [get](const RuncOptions& o) { return shim::go_json_quote((o.*get)()); },
          [mut](RuncOptions* o, const boost::json::value& v) {
            *(o->*mut)() = std::string(v.get_string());
          }};
}

template <class Get, class Set>
Field uint32_field(std::string_view name, Get get, Set set) {
  return {name, FieldKind::kUint32, [get](const RuncOptions& o) { return (o.*get)() == 0; },
          [get](const RuncOptions& o) { return std::to_string((o.*get)()); },
          [set](RuncOptions* o, const boost::json::value& v) {
            (o->*set)(static_cast<std::uint32_t>(v.is_uint64() ? v.get_uint64() : v.get_int64()));
          }};
}

// Declaration order of the Go structs (1.6 has criu_path, 2.x has task_api_*; the union
// in field-number order). json.Marshal writes fields in this order.
const std::vector<Field>& fields() {
  using O = RuncOptions;
  static const std::vector<Field> table = {
      bool_field("no_pivot_root", &O::no_pivot_root, &O::set_no_pivot_root),
      bool_field("no_new_keyring", &O::no_new_keyring, &O::set_no_new_keyring),
      string_field("shim_cgroup", &O::shim_cgroup, &O::mutable_shim_cgroup),
      uint32_field("io_uid", &O::io_uid, &O::set_io_uid),
      uint32_field("io_gid", &O::io_gid, &O::set_io_gid),
      string_field("binary_name", &O::binary_name, &O::mutable_binary_name),
      string_field("root", &O::root, &O::mutable_root),
      string_field("criu_path", &O::criu_path, &O::mutable_criu_path),
      bool_field("systemd_cgroup", &O::systemd_cgroup, &O::set_systemd_cgroup),
      string_field("criu_image_path", &O::criu_image_path,
                   &O::mutable_criu_image_path),
      string_field("criu_work_path", &O::criu_work_path,
                   &O::mutable_criu_work_path),
      string_field("task_api_address", &O::task_api_address,
                   &O::mutable_task_api_address),
      uint32_field("task_api_version", &O::task_api_version, &O::set_task_api_version),
  };
  return table;
}

// The type name of an Any's type_url: what follows the last '/'.
std::string_view type_name(std::string_view type_url) {
  std::size_t slash = type_url.rfind('/');
  return slash == std::string_view::npos ? type_url : type_url.substr(slash + 1);
}

// Whether `value` fits `kind` as Go's decoder sees it (uint32: an integer literal in range).
bool fits(const boost::json::value& value, FieldKind kind) {
  switch (kind) {
    case FieldKind::kBool: return value.is_bool();
    case FieldKind::kString: return value.is_string();
    case FieldKind::kUint32:
      if (value.is_uint64()) return value.get_uint64() <= std::numeric_limits<std::uint32_t>::max();
      if (value.is_int64()) {
        return value.get_int64() >= 0 &&
               value.get_int64() <= std::numeric_limits<std::uint32_t>::max();
      }
      return false;
  }
  return false;
}

std::string_view go_type(FieldKind kind) {
  switch (kind) {
    case FieldKind::kBool: return "bool";
    case FieldKind::kString: return "string";
    case FieldKind::kUint32: return "uint32";
  }
  return "";
}

}  // namespace

shim::Status decode_runc_options(const shim::pb::Any& any, DecodedOptions* out) {
  *out = DecodedOptions{};
  if (any.type_url().empty()) {
    if (!any.value().empty())
      out->note = fmt::format("runtime options without a type_url ({} bytes) ignored",
                              any.value().size());
    return {};
  }
  std::string_view name = type_name(any.type_url());
  if (name != kRuncOptionsType) {
    out->note = fmt::format("runtime options of type {} are not {}: using runc defaults",
                            any.type_url(), kRuncOptionsType);
    if (name == "runtimeoptions.v1.Options") {
      runtimeoptions::v1::Options runtime_options;
      if (runtime_options.ParseFromString(any.value()) && !runtime_options.config_path().empty())
        out->note += fmt::format(" (config_path {} not read)", runtime_options.config_path());
    }
    return {};
  }
  if (!out->options.ParseFromString(any.value())) {
    out->options.Clear();
    out->note = fmt::format("runtime options {}: cannot decode {} bytes", any.type_url(),
                            any.value().size());
    return shim::unknown(fmt::format("unmarshal {}: invalid protobuf ({} bytes)",
                                     any.type_url(), any.value().size()));
  }
  out->present = true;
  return {};
}

std::string options_json(const RuncOptions& options) {
  std::string json = "{";
  for (const Field& field : fields()) {
    if (field.is_zero(options)) continue;
    if (json.size() > 1) json += ',';
    json += fmt::format("\"{}\":{}", field.name, field.json_value(options));
  }
  json += '}';
  return json;
}

shim::Status parse_options_json(std::string_view json, RuncOptions* options) {
  options->Clear();
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(json, ec);
  if (ec) return shim::unknown(fmt::format("options.json: {}", ec.message()));
  if (value.is_null()) return {};
  if (!value.is_object()) {
    return shim::unknown(fmt::format(
        "json: cannot unmarshal {} into Go value of type options.Options", shim::go_json_kind(value)));
  }
  std::optional<std::string> error;
  for (const auto& member : value.get_object()) {
    for (const Field& field : fields()) {
      if (!shim::go_equal_fold(member.key(), field.name)) continue;
      if (member.value().is_null()) break;
      if (fits(member.value(), field.kind)) {
        field.assign(options, member.value());
      } else if (!error) {
        error = fmt::format("json: cannot unmarshal {} into Go struct field Options.{} of type {}",
                            shim::go_json_kind(member.value()), field.name, go_type(field.kind));
      }
      break;
    }
  }
  if (error) return shim::unknown(*error);
  return {};
}

shim::Status write_options(const std::string& bundle, const RuncOptions& options) {
  return shim::go_write_file(shim::go_join_path(bundle, "options.json"), options_json(options), 0600);
}

shim::Status write_runtime(const std::string& bundle, std::string_view binary_name) {
  return shim::go_write_file(shim::go_join_path(bundle, "runtime"), binary_name, 0600);
}

shim::Status read_options(const std::string& bundle, RuncOptions* options, bool* present) {
  options->Clear();
  *present = false;
  std::string content;
  shim::Status status = shim::go_read_file(shim::go_join_path(bundle, "options.json"), &content);
  if (status.code() == shim::Code::kNotFound) return {};
  if (!status.ok()) return status;
  if (status = parse_options_json(content, options); !status.ok()) return status;
  *present = true;
  return {};
}

shim::Status read_runtime(const std::string& bundle, std::string* binary_name) {
  return shim::go_read_file(shim::go_join_path(bundle, "runtime"), binary_name);
}

std::string runc_root(const RuncOptions& options) {
  return options.root().empty() ? std::string(kDefaultCliRoot) : options.root();
}

}  // namespace shim::oci
