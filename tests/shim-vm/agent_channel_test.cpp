// shim-vm's agent channel (shim-vm/src/agent_channel.h) up to the VM: the channel chosen
// from the environment, what qemu, the vsock daemon and the guest's kernel command line
// are given, the token in the shared directory. The channels themselves run in
// tests/vm (serial; hybrid vsock through vhost-device-vsock).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "agent_channel.h"
#include "shim/fs.h"
#include "shim/linux/vsock.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "vm_settings.h"

namespace {

namespace fs = std::filesystem;

// LIBSHIM_VM_CHANNEL for one scope (nullptr: unset), restored after.
class ChannelEnv {
 public:
  explicit ChannelEnv(const char* value) {
    if (const char* was = std::getenv("LIBSHIM_VM_CHANNEL")) saved_ = was;
    if (value != nullptr)
      ::setenv("LIBSHIM_VM_CHANNEL", value, 1);
    else
      ::unsetenv("LIBSHIM_VM_CHANNEL");
  }
  ~ChannelEnv() {
    if (saved_)
      ::setenv("LIBSHIM_VM_CHANNEL", saved_->c_str(), 1);
    else
      ::unsetenv("LIBSHIM_VM_CHANNEL");
  }

 private:
  std::optional<std::string> saved_;
};

// A build dir's two initramfs images.
const shim::test::TempDir& images() {
  static shim::test::TempDir dir;
  std::ofstream(dir.sub("initramfs.cpio.gz")) << "serial";
  std::ofstream(dir.sub("initramfs-vsock.cpio.gz")) << "vsock";
  return dir;
}

shim_vm::VmSettings settings_for(const char* channel) {
  ChannelEnv env(channel);
  shim_vm::VmSettings settings;
  shim::Status s = shim_vm::vm_settings("/dev/null", images().sub("initramfs.cpio.gz"), &settings);
  REQUIRE(s.ok());
  return settings;
}

bool has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

}  // namespace

TEST_CASE("vm settings: the agent channel from LIBSHIM_VM_CHANNEL", "[shim-vm]") {
  shim_vm::VmSettings hybrid = settings_for("hybrid-vsock");
  CHECK(hybrid.channel == shim_vm::ChannelKind::kHybridVsock);
  CHECK(hybrid.channel_reason == "LIBSHIM_VM_CHANNEL");
  CHECK_FALSE(hybrid.channel_chosen);
  CHECK(shim_vm::kernel_command_line(hybrid).find(" libshim_channel=vsock:1024") !=
        std::string::npos);
  // Each channel its initramfs (the other's modules left out).
  CHECK(hybrid.initrd == images().sub("initramfs-vsock.cpio.gz"));
  // What the VM boots with should the channel fall back to serial.
  CHECK(hybrid.serial_initrd == images().sub("initramfs.cpio.gz"));

  shim_vm::VmSettings serial = settings_for("serial");
  CHECK(serial.channel == shim_vm::ChannelKind::kSerial);
  CHECK(shim_vm::kernel_command_line(serial).find("libshim_channel") == std::string::npos);
  CHECK(serial.initrd == images().sub("initramfs.cpio.gz"));
  // An operator's initramfs serves every channel.
  ::setenv("LIBSHIM_VM_INITRD", "/dev/null", 1);
  shim_vm::VmSettings own = settings_for("hybrid-vsock");
  ::unsetenv("LIBSHIM_VM_INITRD");
  CHECK(own.initrd == "/dev/null");
  CHECK(own.serial_initrd == "/dev/null");

  shim_vm::VmSettings chosen = settings_for(nullptr);
  CHECK(chosen.channel_chosen);
  std::string why_not;
  if (shim::vhost_vsock_usable(&why_not)) {
    CHECK(chosen.channel == shim_vm::ChannelKind::kVsock);
    CHECK(chosen.channel_reason == "auto: /dev/vhost-vsock");
  } else {
    CHECK(chosen.channel == shim_vm::ChannelKind::kSerial);
    CHECK(chosen.channel_reason.starts_with("auto: open /dev/vhost-vsock: "));
  }

  ChannelEnv env("carrier-pigeon");
  shim_vm::VmSettings unused;
  shim::Status bad = shim_vm::vm_settings("/dev/null", "/dev/null", &unused);
  CHECK(bad.code() == shim::Code::kInvalidArgument);
  CHECK(bad.message() ==
        "LIBSHIM_VM_CHANNEL=carrier-pigeon: want serial, vsock, hybrid-vsock or auto");
}

TEST_CASE("agent channel: serial listens in the state dir, qemu gets a virtio-serial port",
          "[shim-vm]") {
  shim::test::TempDir dir;
  std::unique_ptr<shim_vm::AgentChannel> channel;
  REQUIRE(shim_vm::AgentChannel::prepare(settings_for("serial"), dir.path(), dir.sub("shared"),
                                         &channel)
              .ok());
  CHECK(fs::is_socket(dir.sub("agent.sock")));
  CHECK(channel->describe() == "serial");
  CHECK(channel->vhost_fd() == -1);
  CHECK(channel->daemon_argv().empty());
  std::vector<std::string> args = channel->qemu_args(5);
  CHECK(has(args, "socket,id=agent,path=" + dir.path() + "/agent.sock"));
  CHECK(has(args, "virtserialport,bus=vser0.0,chardev=agent,name=agent"));
  CHECK_FALSE(fs::exists(dir.sub("shared/.agent-token")));
}

TEST_CASE("agent channel: hybrid vsock runs a daemon and leaves the guest a token", "[shim-vm]") {
  shim::test::TempDir dir;
  fs::create_directory(dir.sub("shared"));
  // A link the guest could have left in the share: the token goes beside it, not through.
  std::string victim = dir.sub("victim");
  std::ofstream(victim) << "keep";
  fs::create_symlink(victim, dir.sub("shared/.agent-token"));

  shim_vm::VmSettings settings = settings_for("hybrid-vsock");
  settings.vsock_device = "/opt/vhost-device-vsock";
  std::unique_ptr<shim_vm::AgentChannel> channel;
  REQUIRE(shim_vm::AgentChannel::prepare(settings, dir.path(), dir.sub("shared"), &channel).ok());
  CHECK(channel->describe() == "hybrid vsock " + dir.path() + "/vsock.sock:1024");
  CHECK(channel->reason() == "LIBSHIM_VM_CHANNEL");
  CHECK(channel->daemon_socket() == dir.path() + "/vsock-vhost.sock");
  CHECK(channel->daemon_argv() ==
        std::vector<std::string>{"/opt/vhost-device-vsock", "--guest-cid", "3", "--socket",
                                 dir.path() + "/vsock-vhost.sock", "--uds-path",
                                 dir.path() + "/vsock.sock"});
  CHECK(channel->qemu_args(5) ==
        std::vector<std::string>{"-chardev",
                                 "socket,id=vsock,path=" + dir.path() + "/vsock-vhost.sock",
                                 "-device", "vhost-user-vsock-device,chardev=vsock"});

  std::string token;
  REQUIRE(shim::read_file(dir.sub("shared/.agent-token"), &token).ok());
  CHECK(token.size() == 32);
  CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
  struct stat st {};
  REQUIRE(::lstat(dir.sub("shared/.agent-token").c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  std::string kept;
  REQUIRE(shim::read_file(victim, &kept).ok());
  CHECK(kept == "keep");

  // Each VM its own token.
  shim::test::TempDir other;
  fs::create_directory(other.sub("shared"));
  REQUIRE(
      shim_vm::AgentChannel::prepare(settings, other.path(), other.sub("shared"), &channel).ok());
  std::string other_token;
  REQUIRE(shim::read_file(other.sub("shared/.agent-token"), &other_token).ok());
  CHECK(other_token != token);
}

TEST_CASE("agent channel: vsock asked for without /dev/vhost-vsock fails, chosen, it falls back",
          "[shim-vm]") {
  if (::access("/dev/vhost-vsock", F_OK) == 0) LIBSHIM_SKIP("this host has /dev/vhost-vsock");
  shim::test::TempDir dir;
  fs::create_directory(dir.sub("shared"));
  shim_vm::VmSettings asked = settings_for("vsock");
  std::unique_ptr<shim_vm::AgentChannel> channel;
  shim::Status s = shim_vm::AgentChannel::prepare(asked, dir.path(), dir.sub("shared"), &channel);
  CHECK(s.code() == shim::Code::kFailedPrecondition);
  CHECK(s.message().starts_with("the agent channel: open /dev/vhost-vsock: "));

  shim_vm::VmSettings chosen = asked;
  chosen.channel_reason = "auto: /dev/vhost-vsock";
  chosen.channel_chosen = true;
  REQUIRE(shim_vm::AgentChannel::prepare(chosen, dir.path(), dir.sub("shared"), &channel).ok());
  CHECK(channel->describe() == "serial");
  CHECK(channel->reason().starts_with("auto: /dev/vhost-vsock; vsock unusable: open "));
  CHECK(fs::is_socket(dir.sub("agent.sock")));
  CHECK_FALSE(fs::exists(dir.sub("shared/.agent-token")));
}
