#include "socket/grouping.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include "gocompat/utf8.h"
#include "shim/fs.h"

namespace shim {
namespace {

namespace json = boost::json;

Status spec_error(std::string_view what) {
  return invalid_argument(fmt::format("read OCI spec (config.json): {}", what));
}

// Go's encoding/json replaces each invalid UTF-8 byte of a string with U+FFFD; doing the
// same keeps the group id, hence the socket hash, identical to the Go shim's.
std::string go_json_string(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t pos = 0; pos < raw.size();) {
    detail::Rune rune = detail::decode_rune(raw, pos);
    if (rune.value == detail::kRuneError && rune.size == 1) {
      out += "\xEF\xBF\xBD";
    } else {
      out.append(raw.substr(pos, rune.size));
    }
    pos += rune.size;
  }
  return out;
}

// Parses the first JSON value of `text`, ignoring what follows, like json.Decoder.
Status parse_first_value(std::string_view text, json::value* value) {
  json::parse_options options;
  options.max_depth = 10000;          // Go's limit; Boost's default of 32 is too strict
  options.allow_invalid_utf8 = true;  // Go accepts it (and substitutes U+FFFD)
  json::stream_parser parser({}, options);
  boost::system::error_code ec;
  parser.write_some(text.data(), text.size(), ec);
  if (!ec && !parser.done()) parser.finish(ec);
  if (ec) return spec_error(ec.message());
  *value = parser.release();
  return {};
}

}  // namespace

std::vector<std::string> default_group_annotations() {
  return {"io.containerd.runc.v2.group", "io.kubernetes.cri.sandbox-id"};
}

Status group_id(std::string_view config_json, std::string_view id, std::string* group,
                const std::vector<std::string>& annotations, std::string_view ungrouped) {
  const std::string_view fallback = ungrouped.empty() ? id : ungrouped;
  json::value spec;
  if (Status status = parse_first_value(config_json, &spec); !status.ok()) return status;
  if (spec.is_null()) {
    *group = std::string(fallback);
    return {};
  }
  if (!spec.is_object()) {
    return spec_error(
        fmt::format("the spec is a JSON {}, not an object", json::to_string(spec.kind())));
  }

  const json::value* found = spec.as_object().if_contains("annotations");
  if (found == nullptr || found->is_null()) {
    *group = std::string(fallback);
    return {};
  }
  if (!found->is_object()) return spec_error("\"annotations\" is not an object");
  const json::object& values = found->as_object();
  for (const auto& [key, value] : values) {
    if (!value.is_string() && !value.is_null()) {
      return spec_error(fmt::format("annotation \"{}\" is not a string", std::string_view(key)));
    }
  }
  for (const std::string& name : annotations) {
    const json::value* value = values.if_contains(name);
    if (value == nullptr) continue;
    *group = value->is_string() ? go_json_string(value->as_string()) : std::string();
    return {};
  }
  *group = std::string(fallback);
  return {};
}

Status bundle_group_id(const std::string& bundle, std::string_view id, std::string* group,
                       const std::vector<std::string>& annotations, std::string_view ungrouped) {
  std::string spec;
  Status read = read_file(bundle + "/config.json", &spec);
  if (read.code() == Code::kNotFound) {
    *group = std::string(id);
    return {};
  }
  if (!read.ok()) return read;
  return group_id(spec, id, group, annotations, ungrouped);
}

}  // namespace shim
