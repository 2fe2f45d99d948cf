// How the Go shim reads the stdio strings of Create/Exec (pkg/process/io.go in 1.6, cmd/containerd-shim-runc-v2/process/io.go in 2.x): the scheme
// comes from stdout only (Go's url.Parse), empty meaning "fifo".
#pragma once

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim {

struct StdioUri {
  std::string scheme;  // lower case; "fifo" when the string has none
  std::string path;    // the URL path, percent-decoded ("file:///a/b" -> "/a/b")
  std::string query;   // raw, without '?' (binary:// logger arguments)
};

// The subset of Go's url.Parse that matters here: "scheme:" prefix ([A-Za-z][A-Za-z0-9+.-]*),
// optional "//authority", path, "?query", "#fragment". Bad percent escapes and control
// characters are errors, as in Go: "unable to parse stdout uri: ...".
shim::Status parse_stdio_uri(std::string_view text, StdioUri* uri);

}  // namespace shim
