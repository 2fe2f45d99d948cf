#include "protocol/start_answer.h"

#include <cstdint>
#include <limits>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "gocompat/go_compat.h"
#include "gocompat/utf8.h"

namespace shim {
namespace {

namespace json = boost::json;

bool is_structured(StartAnswerFormat format) { return format != StartAnswerFormat::kPlainAddress; }

// An Extension as encoding/json writes the Go struct: omitempty drops an empty type URL
// or value; a []byte is base64 (StdEncoding).
json::object json_extension(const shim::pb::Any& any) {
  json::object value;
  if (!any.type_url().empty()) value["type_url"] = any.type_url();
  if (!any.value().empty()) value["value"] = go_base64_std(any.value());
  json::object extension;
  extension["value"] = std::move(value);
  return extension;
}

// Go's json.Marshal of BootstrapResult (the form 2.4 writes bootstrap.json in): fields
// in declaration order, empty ones left out (capabilities and metadata always are here).
std::string json_answer(int version, std::string_view address, std::string_view protocol,
                        const std::vector<shim::pb::Any>& extensions) {
  json::object object;
  object["version"] = version;
  object["address"] = address;
  object["protocol"] = protocol;
  if (!extensions.empty()) {
    json::array list;
    for (const shim::pb::Any& any : extensions) list.push_back(json_extension(any));
    object["extensions"] = std::move(list);
  }
  return go_json_marshal(object);
}

std::string proto_answer(int version, std::string_view address, std::string_view protocol,
                         const std::vector<shim::pb::Any>& extensions) {
  bootstrap_v1::BootstrapResult result;
  result.set_version(version);
  result.set_address(std::string(address));
  result.set_protocol(std::string(protocol));
  for (const shim::pb::Any& any : extensions) *result.add_extensions()->mutable_value() = any;
  return result.SerializeAsString();
}

}  // namespace

std::string_view start_answer_format_name(StartAnswerFormat format) {
  switch (format) {
    case StartAnswerFormat::kPlainAddress:
      return "plain address";
    case StartAnswerFormat::kJsonV2:
      return "JSON version 2";
    case StartAnswerFormat::kJsonV3:
      return "JSON version 3";
    case StartAnswerFormat::kProtoBootstrapResult:
      return "proto BootstrapResult";
  }
  return "?";
}

StartAnswerFormat choose_start_answer_format(StartInputKind stdin_kind, const ShimEnv& env,
                                             std::optional<StartAnswerFormat> requested) {
  if (stdin_kind == StartInputKind::kBootstrapParams) {
    if (requested == StartAnswerFormat::kPlainAddress) return StartAnswerFormat::kPlainAddress;
    return StartAnswerFormat::kProtoBootstrapResult;
  }
  bool json_requested =
      requested == StartAnswerFormat::kJsonV2 || requested == StartAnswerFormat::kJsonV3;
  if (json_requested && env.from_containerd_1_7_or_later()) return *requested;
  return StartAnswerFormat::kPlainAddress;
}

Status format_start_answer(StartAnswerFormat format, std::string_view address, int version,
                           std::string_view protocol, std::string* bytes,
                           const std::vector<shim::pb::Any>& extensions) {
  if (address.empty()) return invalid_argument("start answer: empty address");
  if (!detail::is_valid_utf8(address) || !detail::is_valid_utf8(protocol)) {
    return invalid_argument("start answer: address or protocol is not valid UTF-8");
  }
  if (!is_structured(format) && protocol != "ttrpc") {
    return invalid_argument(fmt::format(
        "start answer: a plain address always means ttrpc, cannot carry protocol \"{}\"",
        protocol));
  }
  if (is_structured(format) && protocol.empty()) {
    return invalid_argument("start answer: empty protocol");
  }
  for (const shim::pb::Any& any : extensions) {
    if (!detail::is_valid_utf8(any.type_url())) {
      return invalid_argument("start answer: an extension's type URL is not valid UTF-8");
    }
  }
  switch (format) {
    case StartAnswerFormat::kPlainAddress:
      *bytes = std::string(address);
      return {};
    case StartAnswerFormat::kJsonV2:
      *bytes = json_answer(2, address, protocol, extensions);
      return {};
    case StartAnswerFormat::kJsonV3:
      *bytes = json_answer(3, address, protocol, extensions);
      return {};
    case StartAnswerFormat::kProtoBootstrapResult:
      *bytes = proto_answer(version, address, protocol, extensions);
      return {};
  }
  return invalid_argument("start answer: unknown format");
}

}  // namespace shim
