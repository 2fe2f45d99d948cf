// The shim's socket address, computed exactly as the Go runc shim does (pkg/shim/util.go
// SocketAddress) so that shims of one group, whichever language, meet on the same socket:
//   unix://<socket_dir>/<hex sha256 of path.Join(grpc_address, namespace, group_id)>
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "shim/status.h"

namespace shim {

// The Go shims' fixed directory (defaults.DefaultStateDir + "/s"); containerd 2.3 may
// pass another one in BootstrapParams.socket_dir.
inline constexpr std::string_view kDefaultSocketDir = "/run/containerd/s";

// Longest socket path the kernel accepts: sun_path is 108 bytes including the NUL.
// containerd 2.3 allows socket_dir up to 42 bytes precisely so that dir + "/" + 64 hex
// digits fits in 107; the Go shim's -socket check uses 106, kGoSocketFlagLimit.
inline constexpr std::size_t kMaxSocketPathLength = 107;
inline constexpr std::size_t kGoSocketFlagLimit = 106;

// Go's filepath.Join on Unix: joins the non-empty elements with "/" and cleans the
// result; all elements empty gives "".
std::string join_path(const std::vector<std::string_view>& elements);

// "unix://<socket_dir>/<hex>". socket_dir is used as given (like Go's Sprintf, no
// cleaning). InvalidArgument if the namespace is empty ("shim namespace cannot be empty")
// or the socket path (without "unix://") would exceed kMaxSocketPathLength.
Status socket_address(std::string_view grpc_address, std::string_view ns,
                      std::string_view group_id, std::string_view socket_dir,
                      std::string* address);
Status socket_address(std::string_view grpc_address, std::string_view ns,
                      std::string_view group_id, std::string* address);

// The pprof/debug socket (Go shims 2.0+): the hashed path gets an extra "/debug".
Status debug_socket_address(std::string_view grpc_address, std::string_view ns,
                            std::string_view group_id, std::string_view socket_dir,
                            std::string* address);

}  // namespace shim
