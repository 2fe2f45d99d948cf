#include "protocol/bootstrap.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/proto_wire.h"
#include "gocompat/utf8.h"

namespace shim {
namespace {

using detail::WireField;
using detail::WireType;

// BootstrapParams field numbers (bootstrap.proto).
constexpr std::uint32_t kExtensionsField = 8;
constexpr std::uint32_t kStringFields[] = {1, 2, 4, 5, 6, 7, 9};

bool is_string_field(std::uint32_t number) {
  return std::find(std::begin(kStringFields), std::end(kStringFields), number) !=
         std::end(kStringFields);
}

// Checks that `field`, when length-delimited, is valid UTF-8. Other wire types are
// unknown fields to the parser and not checked by it either.
bool utf8_ok(const WireField& field) {
  return field.type != WireType::kLengthDelimited || detail::is_valid_utf8(field.payload);
}

// Returns "" if the message `bytes` has valid UTF-8 in the string fields `numbers`, else
// a reason.
std::string check_strings(std::string_view bytes, std::initializer_list<std::uint32_t> numbers,
                          std::string_view message_name) {
  std::vector<WireField> fields;
  std::string error;
  if (!detail::split_fields(bytes, &fields, &error)) {
    return fmt::format("malformed {}: {}", message_name, error);
  }
  for (const WireField& field : fields) {
    bool listed = std::find(numbers.begin(), numbers.end(), field.number) != numbers.end();
    if (listed && !utf8_ok(field)) {
      return fmt::format("{} field {} is not valid UTF-8", message_name, field.number);
    }
  }
  return "";
}

// Extension { Any value = 1 } and Any { string type_url = 1 }: the only nested strings.
std::string check_extension(std::string_view bytes) {
  std::vector<WireField> fields;
  std::string error;
  if (!detail::split_fields(bytes, &fields, &error)) {
    return fmt::format("malformed Extension: {}", error);
  }
  for (const WireField& field : fields) {
    if (field.number != 1 || field.type != WireType::kLengthDelimited) continue;
    if (std::string reason = check_strings(field.payload, {1}, "Any"); !reason.empty()) {
      return reason;
    }
  }
  return "";
}

std::string check_bootstrap_params(const std::vector<WireField>& fields) {
  for (const WireField& field : fields) {
    if (is_string_field(field.number) && !utf8_ok(field)) {
      return fmt::format("BootstrapParams field {} is not valid UTF-8", field.number);
    }
    if (field.number == kExtensionsField && field.type == WireType::kLengthDelimited) {
      if (std::string reason = check_extension(field.payload); !reason.empty()) return reason;
    }
  }
  return "";
}

StartInput unknown_input(std::string reason) {
  StartInput input;
  input.kind = StartInputKind::kUnknown;
  input.reason = std::move(reason);
  return input;
}

bool wanted(const shim::pb::Any& any, const std::vector<std::string>& wanted_types) {
  if (wanted_types.empty()) return true;
  return std::any_of(wanted_types.begin(), wanted_types.end(), [&](const std::string& type) {
    return same_type_url(any.type_url(), type);
  });
}

void pick_options(const std::vector<std::string>& wanted_types, StartInput* input) {
  for (const shim::pb::Any& any : input->all_options) {
    if (wanted(any, wanted_types)) {
      input->options = any;
      return;
    }
  }
  if (!input->all_options.empty()) {
    input->reason = fmt::format("none of the {} runtime option(s) has a wanted type (first: {})",
                                input->all_options.size(), input->all_options[0].type_url());
  }
}

StartInput decode_any(std::string_view bytes, const std::vector<WireField>& fields,
                      const std::vector<std::string>& wanted_types) {
  for (const WireField& field : fields) {
    if (field.type != WireType::kLengthDelimited) {
      return unknown_input(fmt::format(
          "field {} is not length-delimited: not a google.protobuf.Any", field.number));
    }
    if (field.number == 1 && !utf8_ok(field)) {
      return unknown_input("google.protobuf.Any type_url is not valid UTF-8");
    }
  }
  shim::pb::Any any;
  if (!any.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return unknown_input("google.protobuf.Any failed to parse");
  }
  StartInput input;
  input.kind = StartInputKind::kLegacyAny;
  input.all_options.push_back(std::move(any));
  pick_options(wanted_types, &input);
  return input;
}

StartInput decode_bootstrap_params(std::string_view bytes, const std::vector<WireField>& fields,
                                   const std::vector<std::string>& wanted_types) {
  if (std::string reason = check_bootstrap_params(fields); !reason.empty()) {
    return unknown_input(std::move(reason));
  }
  bootstrap_v1::BootstrapParams params;
  if (!params.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return unknown_input("BootstrapParams failed to parse");
  }
  StartInput input;
  input.kind = StartInputKind::kBootstrapParams;
  input.instance_id = params.instance_id();
  input.ns = params.namespace_();
  input.log_level = params.log_level();
  input.containerd_version = params.containerd_version();
  input.ttrpc_address = params.containerd_ttrpc_address();
  input.grpc_address = params.containerd_grpc_address();
  input.containerd_binary = params.containerd_binary();
  if (params.has_socket_dir()) input.socket_dir = params.socket_dir();
  for (const bootstrap_v1::Extension& extension : params.extensions()) {
    if (extension.has_value()) input.all_options.push_back(extension.value());
  }
  pick_options(wanted_types, &input);
  return input;
}

}  // namespace

std::string_view start_input_kind_name(StartInputKind kind) {
  switch (kind) {
    case StartInputKind::kEmpty: return "empty";
    case StartInputKind::kLegacyAny: return "legacy Any";
    case StartInputKind::kBootstrapParams: return "BootstrapParams";
    case StartInputKind::kUnknown: return "unknown";
  }
  return "?";
}

bool StartInput::debug_requested() const {
  return kind == StartInputKind::kBootstrapParams &&
         log_level <= bootstrap_v1::LOG_LEVEL_DEBUG;
}

bool same_type_url(std::string_view a, std::string_view b) {
  auto type_name = [](std::string_view url) {
    std::size_t slash = url.rfind('/');
    return slash == std::string_view::npos ? url : url.substr(slash + 1);
  };
  return type_name(a) == type_name(b);
}

StartInput classify_start_stdin(std::string_view bytes,
                                const std::vector<std::string>& wanted_type_urls) {
  if (bytes.empty()) return StartInput{};
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX)) {
    return unknown_input(fmt::format("stdin too large ({} bytes)", bytes.size()));
  }
  std::vector<WireField> fields;
  std::string error;
  if (!detail::split_fields(bytes, &fields, &error)) {
    return unknown_input(fmt::format("not a protobuf message ({} bytes): {}", bytes.size(), error));
  }
  bool beyond_any = std::any_of(fields.begin(), fields.end(),
                                [](const WireField& field) { return field.number >= 3; });
  if (beyond_any) return decode_bootstrap_params(bytes, fields, wanted_type_urls);
  return decode_any(bytes, fields, wanted_type_urls);
}

}  // namespace shim
