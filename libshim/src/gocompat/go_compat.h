// Small pieces of Go standard-library behaviour that the Go runc shim's observable output
// depends on (paths it passes to runc, error texts, options.json bytes). Reproduced here
// so shim-runc prints what containerd-shim-runc-v2 prints.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "shim/status.h"

namespace shim {

// Go's syscall.Errno text: the C library's strerror with a lower-case first letter
// ("no such file or directory").
std::string go_errno_text(int err);

// Go's exec.ExitError text for a reaped status in the shell convention (128 + signal for
// a killed process, as the reaper reports it): "exit status 1".
std::string go_exit_status_text(int status);

// Go's path/filepath.Clean: lexical, "" -> ".", no trailing slash, ".." resolved.
std::string go_clean_path(std::string_view path);
// Go's filepath.Join: non-empty elements joined with '/' and cleaned; "" if all empty.
std::string go_join_path(std::string_view a, std::string_view b);
// Go's filepath.Abs: Join(cwd, path) for a relative path, Clean otherwise.
std::string go_abs_path(std::string_view path);

// A JSON string literal as Go's encoding/json writes it: quotes included, HTML-safe
// (<, >, & as \u003c...), U+2028/U+2029 escaped, invalid UTF-8 replaced by U+FFFD,
// control characters other than \n \r \t as \u00XX.
std::string go_json_quote(std::string_view text);

// Go's json.Marshal of a decoded document: compact, object keys in the order given,
// strings as go_json_quote() writes them, integers in decimal (other numbers as
// Boost.JSON prints them; an infinite one, from a literal beyond double's range, as null).
std::string go_json_marshal(const boost::json::value& value);

// encoding/base64's StdEncoding (padded), the form encoding/json writes a []byte in.
std::string go_base64_std(std::string_view bytes);

// Go's strings.TrimSpace (Unicode white space, as unicode.IsSpace).
std::string_view go_trim_space(std::string_view text);

// Go's strings.EqualFold for ASCII: how encoding/json matches an object key to a struct
// field name.
bool go_equal_fold(std::string_view a, std::string_view b);

// The JSON kind encoding/json names in an UnmarshalTypeError ("cannot unmarshal <kind>
// into ..."): string, bool, array, object, null or number.
std::string_view go_json_kind(const boost::json::value& value);

// Go's exec.LookPath: a name with a '/' as it is; else the first executable, non-directory
// file named so in a $PATH entry ("" entries meaning "."). NotFound with Go's texts:
// `exec: "x": executable file not found in $PATH`, or, found only relative to the current
// directory, `exec: "x": cannot run executable found relative to current directory`.
shim::Status go_look_path(std::string_view name, std::string* path);

// Go's os.ReadFile / os.WriteFile (O_TRUNC in place, `mode` when created), with Go's
// error texts ("open <path>: no such file or directory"; NotFound for ENOENT, else
// Unknown): shim/fs.h's read_file / write_file in ErrorStyle::kGo.
shim::Status go_read_file(const std::string& path, std::string* content);
shim::Status go_write_file(const std::string& path, std::string_view content, int mode);

}  // namespace shim
