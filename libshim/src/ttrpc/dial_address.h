// Where a TtrpcClient connects: a unix socket ("unix:///path", "/path") or a vsock port
// ("vsock://CID:PORT", how a VM shim reaches its guest agent, as Kata's does).
#pragma once

#include <sys/socket.h>

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim::ttrpc {

struct DialAddress {
  int family = AF_UNIX;
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string description;  // "unix /path", "vsock 3:1024": for error texts
};

// InvalidArgument for an unknown scheme, an empty or too long path, or a CID/port that
// is not a decimal uint32.
Status parse_dial_address(std::string_view address, DialAddress* out);

}  // namespace shim::ttrpc
