// libshim-vm-agent: PID 1 of a pod's VM (shim-vm). It brings up the guest (kernel file
// systems, the initramfs's modules, the shared directory), opens the agent channel (a
// virtio-serial port, or the shim's vsock connection), announces itself there and serves
// shim/vm/agent.proto over ttrpc until the VM ends.
//
// Threading: one loop; the reaper delivers exits on it.
#include <sys/reboot.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include "agent_service.h"
#include "guest_boot.h"
#include "shim/clock.h"
#include "shim/logger.h"
#include "shim/process/process_services.h"
#include "shim/ttrpc/stream_server.h"

namespace {

// The guest cannot go on: say why on the console and end the VM (the host sees qemu exit).
[[noreturn]] void fail(const shim::Status& status) {
  std::fprintf(stderr, "libshim-vm-agent: %s\n", status.message().c_str());
  ::sync();
  if (::getpid() == 1) ::reboot(RB_POWER_OFF);
  std::exit(1);
}

void announce(int fd) {
  std::string line = "LIBSHIM-AGENT 1\n";
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fail(shim::Status(shim::Code::kUnavailable,
                        fmt::format("announce on the channel: {}", std::strerror(errno))));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

int main() {
  using namespace shim_vm_agent;
  std::uint32_t vsock_port = 0;
  if (shim::Status s = vsock_channel_port(&vsock_port); !s.ok()) fail(s);
  DeferredModules network_modules(kNetworkModules);
  // Only the channel's own modules, in load order (the other one's are never loaded).
  if (shim::Status s = load_modules("/lib/modules", &network_modules,
                                    vsock_port != 0 ? kSerialModules : kVsockModules);
      !s.ok())
    fail(s);
  if (shim::Status s = leave_initramfs(); !s.ok()) fail(s);
  if (shim::Status s = mount_kernel_filesystems(); !s.ok()) fail(s);
  tune_page_reporting();
  if (shim::Status s = mount_shared("shared", kSharedDir); !s.ok()) fail(s);
  shim::UniqueFd channel;
  if (shim::Status s = vsock_port != 0 ? accept_vsock_channel(vsock_port, &channel)
                                       : open_channel(kChannelName, 5000, &channel);
      !s.ok())
    fail(s);

  boost::asio::io_context loop;
  std::unique_ptr<shim::Reaper> reaper;
  if (shim::Status s = shim::start_signalfd_reaper(loop.get_executor(), &reaper); !s.ok()) fail(s);
  auto spawner = shim::make_posix_spawner();
  shim::SystemClock clock;
  shim::Logger logger(std::make_shared<shim::CallbackLogSink>([](std::string_view line) {
                        std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
                      }),
                      clock);
  AgentService service(loop.get_executor(), *reaper, *spawner, logger, network_modules);
  shim::ttrpc::Router router;
  service.register_on(router);
  shim::ttrpc::StreamServer server(loop.get_executor(), std::move(router));

  announce(channel.get());
  if (shim::Status s = server.serve(channel.release()); !s.ok()) fail(s);
  loop.run();
  fail(shim::Status(shim::Code::kUnavailable, "the agent channel closed"));
}
