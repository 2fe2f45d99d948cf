// The shim binary's command line, parsed with the semantics of Go's `flag` package (the
// Go shims use it and containerd builds argv for it):
//   -name value, -name=value, --name value, --name=value
//   bool flags: -debug or -debug=true|false (a bool never consumes the next word)
//   parsing stops at the first non-flag word (the action, e.g. "start") or after "--";
//   a lone "-" is a non-flag word; a repeated flag keeps the last value.
// Exact argv per containerd version: runtime/v2/binary.go (1.6/1.7), core/runtime/v2/binary.go
// (2.x).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "shim/status.h"

namespace shim {

struct ShimFlags {
  std::string ns;              // -namespace
  std::string address;         // -address: containerd's gRPC socket path
  std::string publish_binary;  // -publish-binary: containerd's executable
  std::string id;              // -id
  std::string bundle;          // -bundle (delete, 2.3 start)
  bool debug = false;          // -debug
  std::string socket;          // -socket: listen here instead of inheriting fd 3
  std::string debug_socket;    // -debug-socket (2.0+)
  bool version = false;        // -v or -version
  bool info = false;           // -info (2.0+)
  // -h / -help: Go prints the usage and exits 0; parsing stopped there.
  bool help = false;
  std::string action;             // first positional word: "", "start", "delete", ...
  std::vector<std::string> args;  // positional words after the action
  // The whole command line as run (argv[0] included), set by shim::run: a live upgrade
  // execs the new program with it.
  std::vector<std::string> argv;
};

// `args` excludes the program name. Errors (InvalidArgument) use Go's wording, e.g.
// "flag provided but not defined: -x", "flag needs an argument: -id",
// "invalid boolean value \"yes\" for -debug: parse error", "bad flag syntax: ---x".
Status parse_flags(std::span<const std::string> args, ShimFlags* flags);
// argv[0] is the program name and is skipped.
Status parse_flags(int argc, const char* const* argv, ShimFlags* flags);

}  // namespace shim
