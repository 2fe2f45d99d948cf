// AgentChannel: how the shim reaches its guest's agent, and nobody else does.
//
// - serial: qemu connects a virtio-serial port to the shim's unix socket
//   <state dir>/agent.sock; the shim accepts qemu only (SO_PEERCRED). The agent speaks
//   first, "LIBSHIM-AGENT 1\n": what the host sends before the guest opened its port is
//   lost.
// - vsock (the host kernel's vhost-vsock, a CID claimed for the VM) and hybrid vsock (a
//   vhost-user daemon per VM, vhost-device-vsock, with a unix socket in the state dir):
//   the agent listens on vsock port kAgentVsockPort. Any host process may dial a guest's
//   kernel vsock port, so the shim proves itself: it writes a token the agent read from
//   the shared directory (<shared>/.agent-token, which only the shim and the VM see),
//   and the agent answers with its announcement and then takes no other connection.
//
// Threading: prepare() and connect() block (the pool thread that boots the VM).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "shim/linux/vsock.h"
#include "shim/process/exit_future.h"
#include "shim/status.h"
#include "shim/unique_fd.h"
#include "vm_settings.h"

namespace shim_vm {

// The guest's vsock port of the agent (Kata's agent uses the same one).
inline constexpr std::uint32_t kAgentVsockPort = 1024;
// What the agent says once it is ready, and the protocol version it speaks.
inline constexpr std::string_view kAgentHello = "LIBSHIM-AGENT 1\n";

class AgentChannel {
 public:
  // What the channel needs before qemu starts: the serial socket's listener; or a CID
  // claimed on /dev/vhost-vsock (when that fails and vsock was settings.channel_chosen,
  // the channel is serial instead); and for the vsock kinds the token in
  // `shared_dir` (never written through a link there).
  static shim::Status prepare(const VmSettings& settings, const std::string& state_dir,
                              const std::string& shared_dir, std::unique_ptr<AgentChannel>* out);

  // qemu's arguments for the channel; the vhost-vsock fd (vhost_fd()) is qemu's fd
  // `vhost_fd_number`.
  std::vector<std::string> qemu_args(int vhost_fd_number) const;
  // The claimed /dev/vhost-vsock fd for qemu (kVsock), else -1.
  int vhost_fd() const { return vhost_.get(); }
  // For kHybridVsock: the daemon's command line (else empty) and the socket it listens
  // on for qemu, which must exist before qemu starts.
  std::vector<std::string> daemon_argv() const;
  std::string daemon_socket() const { return state_dir_ + "/vsock-vhost.sock"; }
  // "serial", "vsock 1234:1024", "hybrid vsock <dir>/vsock.sock:1024": for the log.
  std::string describe() const;

  // The channel's kind: settings.channel, or kSerial when vsock fell back.
  ChannelKind kind() const { return kind_; }
  // Why this channel ("LIBSHIM_VM_CHANNEL", "auto: ...", and why not vsock if it fell
  // back to serial).
  const std::string& reason() const { return reason_; }

  // After qemu started: the agent's connection once it announced itself, or why not
  // (qemu or the channel's `daemon` ended, the deadline passed, another announcement).
  shim::Status connect(pid_t qemu, std::chrono::steady_clock::time_point deadline,
                       const shim::ExitFuture& exit, const shim::ExitFuture* daemon,
                       shim::UniqueFd* out);

 private:
  AgentChannel() = default;
  shim::Status accept_qemu(pid_t qemu, std::chrono::steady_clock::time_point deadline,
                           const shim::ExitFuture& exit, shim::UniqueFd* out);
  shim::Status dial_agent(std::chrono::steady_clock::time_point deadline,
                          const shim::ExitFuture& exit, const shim::ExitFuture* daemon,
                          shim::UniqueFd* out);

  ChannelKind kind_ = ChannelKind::kSerial;
  std::string state_dir_;
  std::string vsock_device_;
  std::string reason_;
  shim::UniqueFd listener_;   // serial: <state dir>/agent.sock
  shim::UniqueFd vhost_;      // vsock: /dev/vhost-vsock with the VM's CID
  shim::VsockTarget target_;  // the vsock kinds: where the agent listens
  std::string token_;         // the vsock kinds: what proves the shim to the agent
};

}  // namespace shim_vm
