#include "socket/socket_address.h"

#include "gocompat/go_compat.h"

#include <fmt/format.h>

#include "socket/sha256.h"

namespace shim {
namespace {

constexpr std::string_view kUnixScheme = "unix://";

Status address_for(std::string_view hashed_path, std::string_view socket_dir,
                   std::string* address) {
  std::string path = fmt::format("{}/{}", socket_dir, sha256_hex(hashed_path));
  if (path.size() > kMaxSocketPathLength) {
    return invalid_argument(fmt::format(
        "socket path \"{}\" is {} bytes, longer than the {}-byte unix socket limit "
        "(shorten the socket dir \"{}\")",
        path, path.size(), kMaxSocketPathLength, socket_dir));
  }
  *address = fmt::format("{}{}", kUnixScheme, path);
  return {};
}

Status hashed_path(std::string_view grpc_address, std::string_view ns,
                   std::string_view group_id, bool debug, std::string* path) {
  if (ns.empty()) return invalid_argument("shim namespace cannot be empty");
  *path = join_path({grpc_address, ns, group_id});
  if (debug) *path = join_path({*path, "debug"});
  return {};
}

}  // namespace

std::string join_path(const std::vector<std::string_view>& elements) {
  std::size_t first = 0;
  while (first < elements.size() && elements[first].empty()) ++first;
  if (first == elements.size()) return "";
  std::string joined;
  for (std::size_t i = first; i < elements.size(); ++i) {
    if (i > first) joined.push_back('/');
    joined.append(elements[i]);
  }
  return go_clean_path(joined);
}

Status socket_address(std::string_view grpc_address, std::string_view ns,
                      std::string_view group_id, std::string_view socket_dir,
                      std::string* address) {
  std::string path;
  if (Status status = hashed_path(grpc_address, ns, group_id, false, &path); !status.ok()) {
    return status;
  }
  return address_for(path, socket_dir, address);
}

Status socket_address(std::string_view grpc_address, std::string_view ns,
                      std::string_view group_id, std::string* address) {
  return socket_address(grpc_address, ns, group_id, kDefaultSocketDir, address);
}

Status debug_socket_address(std::string_view grpc_address, std::string_view ns,
                            std::string_view group_id, std::string_view socket_dir,
                            std::string* address) {
  std::string path;
  if (Status status = hashed_path(grpc_address, ns, group_id, true, &path); !status.ok()) {
    return status;
  }
  return address_for(path, socket_dir, address);
}

}  // namespace shim
