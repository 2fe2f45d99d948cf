// Status: a gRPC status code plus message, the error currency of ttrpc and the task API.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace shim {

// gRPC status codes, numbered as on the wire (google.rpc.Code).
enum class Code : int {
  kOk = 0,
  kCanceled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "OK", "NotFound", ...: for logs and test messages.
std::string_view code_name(Code code);

// [[nodiscard]]: a Status is never dropped silently. Where a failure changes nothing
// (best-effort clean-up), say so with ignore_error().
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // `code` with `message` (the text containerd shows; empty for OK).
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  // Whether the code is OK.
  bool ok() const { return code_ == Code::kOk; }
  // The gRPC status code.
  Code code() const { return code_; }
  // The message, without the code.
  const std::string& message() const { return message_; }
  // "NotFound: container not created: not found"
  std::string to_string() const;
  // Drops this status on purpose: the call was best effort and its failure changes
  // nothing (the caller has said why in a comment).
  void ignore_error() const {}

  friend bool operator==(const Status&, const Status&) = default;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// containerd's errdefs convention: the message ends with the class string, so that
// containerd's error mapping prints "<context>: not found" and so on.
Status not_found(std::string_view context);             // "<context>: not found"
Status already_exists(std::string_view context);        // "<context>: already exists"
Status failed_precondition(std::string_view context);   // "<context>: failed precondition"
Status invalid_argument(std::string_view context);      // "<context>: invalid argument"
Status not_implemented(std::string_view context);       // "<context>: not implemented"
Status unavailable(std::string_view context);           // "<context>: unavailable"
// An unclassified error: code Unknown, message as given (the Go shim's plain errors).
Status unknown(std::string message);

// Thrown by handlers and helpers that prefer exceptions; servers turn it into its status.
class StatusError : public std::runtime_error {
 public:
  // Carries `status`; what() is its message.
  explicit StatusError(Status status)
      : std::runtime_error(status.message()), status_(std::move(status)) {}
  // The status it carries.
  const Status& status() const { return status_; }

 private:
  Status status_;
};

}  // namespace shim
