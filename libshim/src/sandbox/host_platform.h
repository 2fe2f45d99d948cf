// The platform a sandbox reports by default (Sandbox::platform): this host's, named as Go
// names it, since containerd compares it with image platforms (containerd/platforms).
#pragma once

#include <string>
#include <string_view>

namespace shim {

// Go's GOARCH for a uname(2) machine name: x86_64 -> amd64, aarch64 -> arm64, i686 ->
// 386, ...; a name Go does not know is returned as it is.
std::string go_architecture(std::string_view machine);

// GOARM's variant for a 32-bit ARM machine name ("armv7l" -> "v7"), "" otherwise.
std::string go_arm_variant(std::string_view machine);

// This host's uname(2) machine name ("" if uname fails).
std::string host_machine();

}  // namespace shim
