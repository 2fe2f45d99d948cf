#include "protocol/start_answer.h"

#include <cstdint>
#include <limits>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "gocompat/utf8.h"


namespace shim {
namespace {

namespace json = boost::json;

bool is_structured(StartAnswerFormat format) {
  return format != StartAnswerFormat::kPlainAddress;
}

std::string json_answer(int version, std::string_view address, std::string_view protocol) {
  json::object object;
  object["version"] = version;
  object["address"] = address;
  object["protocol"] = protocol;
  return json::serialize(object);
}

std::string proto_answer(int version, std::string_view address, std::string_view protocol) {
  bootstrap_v1::BootstrapResult result;
  result.set_version(version);
  result.set_address(std::string(address));
  result.set_protocol(std::string(protocol));
  return result.SerializeAsString();
}

}  // namespace

std::string_view start_answer_format_name(StartAnswerFormat format) {
  switch (format) {
    case StartAnswerFormat::kPlainAddress: return "plain address";
    case StartAnswerFormat::kJsonV2: return "JSON version 2";
    case StartAnswerFormat::kJsonV3: return "JSON version 3";
    case StartAnswerFormat::kProtoBootstrapResult: return "proto BootstrapResult";
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
                           std::string_view protocol, std::string* bytes) {
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
  switch (format) {
    case StartAnswerFormat::kPlainAddress:
      *bytes = std::string(address);
      return {};
    case StartAnswerFormat::kJsonV2:
      *bytes = json_answer(2, address, protocol);
      return {};
    case StartAnswerFormat::kJsonV3:
      *bytes = json_answer(3, address, protocol);
      return {};
    case StartAnswerFormat::kProtoBootstrapResult:
      *bytes = proto_answer(version, address, protocol);
      return {};
  }
  return invalid_argument("start answer: unknown format");
}

}  // namespace shim
