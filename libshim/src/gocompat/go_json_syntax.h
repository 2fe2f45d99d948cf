// Go's encoding/json syntax check (what json.Unmarshal does before decoding), with its
// error texts. The Go runc shim unmarshals some request payloads itself (Update's
// LinuxResources) before runc sees them, so a malformed payload fails with Go's JSON
// error, e.g. "invalid character 'o' in literal null (expecting 'u')" or "unexpected end
// of JSON input", not with runc's.
#pragma once

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim {

// OK if `text` is exactly one JSON value, optionally surrounded by JSON white space;
// else Unknown (errdefs.ToGRPC of a plain error) with the text of Go's SyntaxError.
// Nesting deeper than Go's 10000 levels fails as in Go ("... exceeded max depth").
shim::Status go_json_syntax_check(std::string_view text);

// Go's quoteChar(): how a JSON syntax error names the offending byte ('x', '\n',
// '\x01', '\u0080', 'é' for 0xE9 read as a Latin-1 rune, '\'' and '"').
std::string go_json_quote_byte(unsigned char c);

}  // namespace shim
