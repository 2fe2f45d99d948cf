#include "shim/status.h"

#include <array>

#include <fmt/format.h>

namespace shim {

std::string_view code_name(Code code) {
  static constexpr std::array<std::string_view, 17> kNames = {
      "OK",           "Canceled",          "Unknown",          "InvalidArgument",
      "DeadlineExceeded", "NotFound",      "AlreadyExists",    "PermissionDenied",
      "ResourceExhausted", "FailedPrecondition", "Aborted",    "OutOfRange",
      "Unimplemented", "Internal",         "Unavailable",      "DataLoss",
      "Unauthenticated"};
  auto index = static_cast<std::size_t>(code);
  return index < kNames.size() ? kNames[index] : std::string_view("Code?");
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return fmt::format("{}: {}", code_name(code_), message_);
}

namespace {
Status classified(Code code, std::string_view context, std::string_view suffix) {
  if (context.empty()) return Status(code, std::string(suffix));
  return Status(code, fmt::format("{}: {}", context, suffix));
}
}  // namespace

Status not_found(std::string_view context) {
  return classified(Code::kNotFound, context, "not found");
}
Status already_exists(std::string_view context) {
  return classified(Code::kAlreadyExists, context, "already exists");
}
Status failed_precondition(std::string_view context) {
  return classified(Code::kFailedPrecondition, context, "failed precondition");
}
Status invalid_argument(std::string_view context) {
  return classified(Code::kInvalidArgument, context, "invalid argument");
}
Status not_implemented(std::string_view context) {
  return classified(Code::kUnimplemented, context, "not implemented");
}
Status unavailable(std::string_view context) {
  return classified(Code::kUnavailable, context, "unavailable");
}
Status unknown(std::string message) { return Status(Code::kUnknown, std::move(message)); }

}  // namespace shim
