// How the Go runc shim turns a failed runc command into the error containerd shows
// (containerd pkg/process/utils.go runtimeError): the last `error` line of runc's log.json, prefixed with what was
// being done, plus the special mapping of `runc kill` failures.
//
// log.json is never truncated or rotated, neither by go-runc nor by the Go shim (runc
// opens it O_APPEND): it accumulates every command's lines for the container's lifetime,
// and the last error line in the whole file wins, even one left by an earlier command.
// We keep that behaviour.
#pragma once

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim::oci {

// Action strings of the Go shim's runtimeError() calls.
inline constexpr std::string_view kCreateFailed = "OCI runtime create failed";
inline constexpr std::string_view kStartFailed = "OCI runtime start failed";
inline constexpr std::string_view kExecFailed = "OCI runtime exec failed";
inline constexpr std::string_view kPauseFailed = "OCI runtime pause failed";
inline constexpr std::string_view kResumeFailed = "OCI runtime resume failed";
inline constexpr std::string_view kKillAllFailed = "OCI runtime killall failed";
inline constexpr std::string_view kRestoreFailed = "OCI runtime restore failed";
inline constexpr std::string_view kDeleteFailed = "failed to delete task";

// The trimmed `msg` of the last log entry whose `level` is "error", "" if none, decoded
// like Go's json.Decoder reading the file value after value into one reused struct
// {Level, Msg string; Time time.Time}: keys match case-insensitively, a field missing
// from an entry keeps the previous entry's value, and any syntax or type error stops the
// scan with an error (Go's text for the common cases, e.g. "invalid character 'g'
// looking for beginning of value").
shim::Status last_runtime_error_in(std::string_view log_content, std::string* message);
// The same for a file; unreadable: "open <path>: no such file or directory" and so on.
shim::Status last_runtime_error(const std::string& log_path, std::string* message);

// The Go shim's runtimeError(): code Unknown,
//   "<action>: <msg>"                                            last error line found
//   "<action>: <runc_error>"                                     no error line
//   "<action>: unable to retrieve OCI runtime error (<read error>): <runc_error>"
// `runc_error` is go-runc's error text, e.g. "runc did not terminate successfully: exit
// status 1: <output>".
shim::Status runtime_error(const std::string& log_path, std::string_view action,
                           std::string_view runc_error);

// checkKillError for `runc kill` failures (text of go-runc's error):
//   "...os: process already finished...", "...container not running...",
//   "...no such process..." (any case)      -> NotFound "process already finished: not found"
//   "...does not exist..."                  -> NotFound "no such container: not found"
//   anything else                           -> Unknown  "unknown error after kill: <text>"
shim::Status kill_error(std::string_view runc_error);
// The same for a kill(2) errno (exec processes): ESRCH -> "process already finished: not
// found", else "unknown error after kill: <errno text>". The Go shim then prefixes
// "exec kill error: ", which is left to the caller.
shim::Status kill_errno_error(int err);

}  // namespace shim::oci
