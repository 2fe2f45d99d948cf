// A VM guest's vsock port, from both ends: the host dials it, the guest listens on it.
// Two host transports give the same guest socket (AF_VSOCK on virtio-vsock):
//
// - the kernel's vhost-vsock: AF_VSOCK to the guest's CID. The CID is claimed on
//   /dev/vhost-vsock by reserve_vsock_cid() and that fd handed to the VMM (qemu:
//   `vhost-vsock-device,guest-cid=CID,vhostfd=N`), as Kata's shim does
//   (kata-containers src/runtime/virtcontainers/utils/utils_linux.go FindContextID), so
//   two VMs never race for one CID;
// - hybrid vsock, where the VMM or a vhost-user daemon serves virtio-vsock itself
//   (Firecracker, Cloud Hypervisor, rust-vmm's vhost-device-vsock): a unix socket on the
//   host; a connection to it writes "CONNECT <port>\n" and is the guest port's stream once
//   the answer "OK <host port>\n" came (firecracker docs/vsock.md).
//
// Threading: blocking calls, for a pool thread or a guest's main().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim {

// Where a guest's vsock port is reached from the host.
struct VsockTarget {
  std::uint32_t cid = 0;   // kernel vsock: the guest's CID (uds_path empty)
  std::string uds_path;    // hybrid vsock: the VMM's or daemon's unix socket
  std::uint32_t port = 0;  // the guest's vsock port

  // "vsock 5:1024" or "hybrid vsock /run/x/vsock.sock:1024": for error texts.
  std::string describe() const;
};

// Connects to `target` once, within `timeout` (the connect and, for hybrid vsock, the
// answer). Unavailable while nothing listens there yet (the guest still booting, the
// daemon not up); DeadlineExceeded when no answer came in time; InvalidArgument for an
// answer that is not "OK <n>". `out` is a blocking, close-on-exec stream socket.
[[nodiscard]] Status dial_vsock(const VsockTarget& target, std::chrono::milliseconds timeout,
                                UniqueFd* out);

// Opens /dev/vhost-vsock and claims a CID no other VM on the host has, trying `first`,
// then the next ones (3 and up; 0-2 are reserved). The claim lasts while `vhost` is open:
// hand it to the VMM. FailedPrecondition when there is no usable /dev/vhost-vsock.
[[nodiscard]] Status reserve_vsock_cid(std::uint32_t first, UniqueFd* vhost, std::uint32_t* cid);

// Whether /dev/vhost-vsock can be opened for reading and writing; else why not.
bool vhost_vsock_usable(std::string* why_not);

// In the guest: a close-on-exec AF_VSOCK stream socket listening on `port` (any CID).
[[nodiscard]] Status listen_vsock(std::uint32_t port, UniqueFd* out);

// Any host process may dial a guest's kernel vsock port, so the host's side proves
// itself with a secret it gave the guest another way (a file in a shared directory): its
// first line. Accepts connections on `listener` (any listening stream socket; made
// non-blocking) until one's first line is `token` + "\n", and returns that one
// (blocking, close-on-exec). Others are closed: a wrong or too long line, none within
// `line_timeout`, or one of more than 16 waiting at once (the oldest silent one goes).
// The backlog is drained at once and the waiting ones are read side by side, so
// strangers delay the host's connection little. `on_refused` (optional) hears why each
// was closed. InvalidArgument for a token that is empty, longer than 200 bytes or holds
// a newline.
[[nodiscard]] Status accept_with_token(
    int listener, const std::string& token, std::chrono::milliseconds line_timeout, UniqueFd* out,
    const std::function<void(const std::string&)>& on_refused = {});

}  // namespace shim
