#include "ttrpc/dial_address.h"

#include <sys/un.h>

#include <linux/vm_sockets.h>

#include <charconv>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "shim/ttrpc/client.h"

namespace shim::ttrpc {
namespace {

bool parse_u32(std::string_view text, std::uint32_t* value) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

Status parse_vsock(std::string_view rest, DialAddress* out) {
  std::size_t colon = rest.find(':');
  std::uint32_t cid = 0;
  std::uint32_t port = 0;
  if (colon == std::string_view::npos || !parse_u32(rest.substr(0, colon), &cid) ||
      !parse_u32(rest.substr(colon + 1), &port)) {
    return Status(Code::kInvalidArgument, fmt::format("ttrpc: vsock address vsock://{} is not CID:PORT", rest));
  }
  sockaddr_vm address{};
  address.svm_family = AF_VSOCK;
  address.svm_cid = cid;
  address.svm_port = port;
  std::memcpy(&out->storage, &address, sizeof address);
  out->length = sizeof address;
  out->family = AF_VSOCK;
  out->description = fmt::format("vsock {}:{}", cid, port);
  return {};
}

}  // namespace

Status parse_dial_address(std::string_view address, DialAddress* out) {
  constexpr std::string_view kVsock = "vsock://";
  if (address.starts_with(kVsock)) return parse_vsock(address.substr(kVsock.size()), out);
  std::string path;
  if (Status s = unix_socket_path(address, &path); !s.ok()) return s;
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path, path.data(), path.size());
  std::memcpy(&out->storage, &un, sizeof un);
  out->length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  out->family = AF_UNIX;
  out->description = "unix " + path;
  return {};
}

}  // namespace shim::ttrpc
