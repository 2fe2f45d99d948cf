#include "agent_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "shim/fs.h"

namespace shim_vm {

using shim::Code;
using shim::Status;
using Clock = std::chrono::steady_clock;

namespace {

Status sys_error(std::string_view what) {
  return Status(Code::kInternal, fmt::format("{}: {}", what, std::strerror(errno)));
}

Status listen_on(const std::string& path, shim::UniqueFd* out) {
  shim::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path))
    return Status(Code::kInvalidArgument, fmt::format("socket path {} is too long", path));
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0)
    return sys_error("bind " + path);
  if (::listen(fd.get(), 1) != 0) return sys_error("listen " + path);
  *out = std::move(fd);
  return {};
}

// The token file, never through a link: the shared directory is the guest's to write.
Status write_token(const std::string& path, const std::string& token) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return sys_error("unlink " + path);
  shim::UniqueFd fd(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error("create " + path);
  if (::write(fd.get(), token.data(), token.size()) != static_cast<ssize_t>(token.size()))
    return sys_error("write " + path);
  return {};
}

Status random_token(std::string* out) {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    return sys_error("getrandom for the agent's token");
  out->clear();
  for (unsigned char b : bytes) *out += fmt::format("{:02x}", b);
  return {};
}

Status qemu_ended(const shim::ExitFuture& exit, std::string_view what) {
  auto e = exit.wait();
  return Status(Code::kUnavailable,
                fmt::format("{}: qemu exited with status {}", what, e ? e->status : -1));
}

// Waits until `fd` is readable or `deadline`; fails early once `exit` says qemu ended.
Status wait_readable(int fd, Clock::time_point deadline, const shim::ExitFuture& exit,
                     std::string_view what) {
  for (;;) {
    if (exit.ready()) return qemu_ended(exit, what);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return Status(Code::kDeadlineExceeded, fmt::format("{}: timed out", what));
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 100)));
    if (n < 0 && errno != EINTR) return sys_error(what);
    if (n > 0) return {};
  }
}

Status read_hello(int fd, Clock::time_point deadline, const shim::ExitFuture& exit) {
  std::string got;
  while (got.size() < kAgentHello.size()) {
    if (Status s = wait_readable(fd, deadline, exit, "wait for the agent"); !s.ok()) return s;
    char c = 0;
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status(Code::kUnavailable,
                    "the agent channel closed before the agent announced itself");
    got.push_back(c);
    if (c == '\n') break;
  }
  if (got != kAgentHello) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("the agent announced {:?}, want {:?}", got, kAgentHello));
  }
  return {};
}

}  // namespace

Status AgentChannel::prepare(const VmSettings& settings, const std::string& state_dir,
                             const std::string& shared_dir, std::unique_ptr<AgentChannel>* out) {
  std::unique_ptr<AgentChannel> channel(new AgentChannel());
  channel->kind_ = settings.channel;
  channel->state_dir_ = state_dir;
  channel->vsock_device_ = settings.vsock_device;
  channel->reason_ = settings.channel_reason;
  switch (settings.channel) {
    case ChannelKind::kSerial:
      if (Status s = listen_on(state_dir + "/agent.sock", &channel->listener_); !s.ok()) return s;
      break;
    case ChannelKind::kVsock: {
      // From a random CID: shims booting at once seldom try the same ones.
      std::uint32_t first = 0;
      if (::getrandom(&first, sizeof first, 0) != sizeof first) first = ::getpid();
      Status s =
          shim::reserve_vsock_cid(3 + first % 0x7fffffffu, &channel->vhost_, &channel->target_.cid);
      if (s.ok()) break;
      if (!settings.channel_chosen) return Status(s.code(), "the agent channel: " + s.message());
      // Chosen, not asked for: serial still works.
      channel->kind_ = ChannelKind::kSerial;
      channel->reason_ =
          fmt::format("{}; vsock unusable: {}", settings.channel_reason, s.message());
      if (Status l = listen_on(state_dir + "/agent.sock", &channel->listener_); !l.ok()) return l;
      break;
    }
    case ChannelKind::kHybridVsock:
      channel->target_.uds_path = state_dir + "/vsock.sock";
      break;
  }
  if (channel->kind_ != ChannelKind::kSerial) {
    channel->target_.port = kAgentVsockPort;
    if (Status s = random_token(&channel->token_); !s.ok()) return s;
    if (Status s = write_token(shared_dir + "/.agent-token", channel->token_); !s.ok()) return s;
  }
  *out = std::move(channel);
  return {};
}

std::vector<std::string> AgentChannel::qemu_args(int vhost_fd_number) const {
  switch (kind_) {
    case ChannelKind::kSerial:
      return {"-chardev", fmt::format("socket,id=agent,path={}/agent.sock", state_dir_),
              // Room for the agent's port only: the default 31 ports' queues cost the
              // guest 5 MiB.
              "-device", "virtio-serial-device,id=vser0,max_ports=2", "-device",
              "virtserialport,bus=vser0.0,chardev=agent,name=agent"};
    case ChannelKind::kVsock:
      return {"-device", fmt::format("vhost-vsock-device,guest-cid={},vhostfd={}", target_.cid,
                                     vhost_fd_number)};
    case ChannelKind::kHybridVsock:
      return {"-chardev", fmt::format("socket,id=vsock,path={}", daemon_socket()), "-device",
              "vhost-user-vsock-device,chardev=vsock"};
  }
  return {};
}

std::vector<std::string> AgentChannel::daemon_argv() const {
  if (kind_ != ChannelKind::kHybridVsock) return {};
  // The CID is the guest's own: one daemon per VM, no other guest shares it.
  return {vsock_device_, "--guest-cid",   "3", "--socket", daemon_socket(),
          "--uds-path",  target_.uds_path};
}

std::string AgentChannel::describe() const {
  return kind_ == ChannelKind::kSerial ? std::string("serial") : target_.describe();
}

Status AgentChannel::connect(pid_t qemu, Clock::time_point deadline, const shim::ExitFuture& exit,
                             const shim::ExitFuture* daemon, shim::UniqueFd* out) {
  shim::UniqueFd fd;
  if (kind_ == ChannelKind::kSerial) {
    Status s = accept_qemu(qemu, deadline, exit, &fd);
    if (s.ok()) s = read_hello(fd.get(), deadline, exit);
    if (!s.ok()) return s;
    *out = std::move(fd);
    return {};
  }
  // A connection the agent closed before its announcement (among many strangers', it
  // dropped ours): dial again, a few times (an agent that refuses our token refuses it
  // every time).
  constexpr int kDials = 5;
  Status last;
  for (int i = 0; i < kDials; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (Status s = dial_agent(deadline, exit, daemon, &fd); !s.ok()) return s;
    last = read_hello(fd.get(), deadline, exit);
    if (last.ok()) {
      *out = std::move(fd);
      return {};
    }
    if (last.code() != Code::kUnavailable || exit.ready()) return last;
  }
  return Status(last.code(), fmt::format("{} (dialled {} times)", last.message(), kDials));
}

Status AgentChannel::accept_qemu(pid_t qemu, Clock::time_point deadline,
                                 const shim::ExitFuture& exit, shim::UniqueFd* out) {
  if (Status s =
          wait_readable(listener_.get(), deadline, exit, "wait for qemu on the agent socket");
      !s.ok())
    return s;
  shim::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return sys_error("accept on the agent socket");
  ucred peer{};
  socklen_t length = sizeof(peer);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0)
    return sys_error("SO_PEERCRED");
  if (peer.pid != qemu) {
    return Status(Code::kPermissionDenied,
                  fmt::format("agent socket: peer pid {} is not qemu ({})", peer.pid, qemu));
  }
  *out = std::move(fd);
  return {};
}

// The guest listens once its agent is up: until then each dial fails (Unavailable).
Status AgentChannel::dial_agent(Clock::time_point deadline, const shim::ExitFuture& exit,
                                const shim::ExitFuture* daemon, shim::UniqueFd* out) {
  std::string what = fmt::format("dial the agent ({})", target_.describe());
  Status last(Code::kDeadlineExceeded, "the boot's deadline passed before a dial");
  for (;;) {
    if (exit.ready()) return qemu_ended(exit, what);
    if (daemon != nullptr && daemon->ready()) {
      auto e = daemon->wait();
      return Status(Code::kUnavailable, fmt::format("{}: the vsock daemon exited with status {}",
                                                    what, e ? e->status : -1));
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 1) break;  // a zero timeout would be none
    shim::UniqueFd fd;
    last = shim::dial_vsock(target_, std::min(left, std::chrono::milliseconds(1000)), &fd);
    if (last.ok()) {
      std::string line = token_ + "\n";
      ssize_t sent = ::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL);
      if (sent == static_cast<ssize_t>(line.size())) {
        *out = std::move(fd);
        return {};
      }
      // The agent dropped us already (among strangers): as a failed dial.
      last = Status(
          sent < 0 && (errno == EPIPE || errno == ECONNRESET) ? Code::kUnavailable
                                                              : Code::kInternal,
          fmt::format("send the token: {}", sent < 0 ? std::strerror(errno) : "short write"));
    }
    if (last.code() != Code::kUnavailable && last.code() != Code::kDeadlineExceeded) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status(last.code() == Code::kUnavailable ? Code::kDeadlineExceeded : last.code(),
                fmt::format("{}: {}", what, last.message()));
}

}  // namespace shim_vm
