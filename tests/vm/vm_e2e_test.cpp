// containerd-shim-kvm-v1 end to end, under containerd 1.6, 1.7 and 2.1 ([multi-version]):
// containers run through `ctr run` in a qemu micro-VM per pod (the guest kernel from
// cmake/fetch-kernel.sh, the initramfs with the agent from the build), on KVM where it
// can boot the kernel, else TCG. Few cases on purpose: each boots VMs (seconds under
// TCG). They skip without qemu, virtiofsd or the kernel.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "shim/linux/cgroup.h"
#include "shim/unique_fd.h"
#include "state_dir.h"
#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"
#include "support/ttrpc_harness.h"
#include "support/wait_until.h"

namespace shim::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kShim = shim_build_dir() + "/shim-vm/containerd-shim-kvm-v1";

std::optional<std::string> vm_unavailable() {
  if (!fs::exists(LIBSHIM_VM_KERNEL))
    return fmt::format("no guest kernel at {} (cmake/fetch-kernel.sh)", LIBSHIM_VM_KERNEL);
  if (!fs::exists(shim_build_dir() + "/shim-vm/initramfs.cpio.gz")) return "no initramfs built";
  if (::access("/usr/lib/qemu/virtiofsd", X_OK) != 0) return "no /usr/lib/qemu/virtiofsd";
  if (::system("command -v qemu-system-x86_64 >/dev/null 2>&1") != 0)
    return "no qemu-system-x86_64";
  return std::nullopt;
}

#define SKIP_WITHOUT_VM()                                                \
  do {                                                                   \
    LIBSHIM_SKIP_WITHOUT_CONTAINERD();                                   \
    if (auto unavailable = vm_unavailable()) LIBSHIM_SKIP(*unavailable); \
  } while (false)

struct VmSetup {
  PrivateContainerd fx;
  std::string rootfs = fx.dir() + "/rootfs";

  explicit VmSetup(ContainerdOptions options = {}) : fx(std::move(options)) {
    make_busybox_rootfs(rootfs);
    std::ofstream(rootfs + "/etc/message") << "a file in the rootfs\n";
  }

  std::vector<std::string> run(const std::vector<std::string>& flags, const std::string& id,
                               const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"run"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--runtime", fs::canonical(kShim).string()});
    for (const auto& f : fx.run_flags(/*with_runc_root=*/false)) argv.push_back(f);
    argv.insert(argv.end(), {"--rootfs", rootfs, id});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  std::string task_status(const std::string& id) const { return shim::test::task_status(fx, id); }
  bool wait_status(const std::string& id, const std::string& status) const {
    return wait_task_status(fx, id, status, 30s);
  }
  std::vector<std::string> exec(const std::string& id, const std::string& exec_id,
                                const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"task", "exec"};
    for (const auto& f : fx.run_flags(false)) argv.push_back(f);
    argv.insert(argv.end(), {"--exec-id", exec_id, id});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
};

TEST_CASE("vm: a container runs in the pod's VM: stdio, exit codes, the guest's kernel",
          "[vm-e2e][multi-version]") {
  SKIP_WITHOUT_VM();
  VmSetup s;
  auto events = s.fx.subscribe_events();

  auto hello = s.fx.ctr(s.run({"--rm"}, "hello",
                              {"/bin/sh", "-c",
                               "echo hello from the guest; echo to stderr >&2; "
                               "cat /etc/message; exit 3"}),
                        120s);
  INFO(s.fx.log_tail());
  CHECK(hello.exit_code == 3);
  CHECK(hello.out == "hello from the guest\na file in the rootfs\n");
  CHECK(hello.err == "to stderr\n");
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"hello\""}, 10s));
  CHECK(event_topics_for(*events, "hello") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"});

  // The container's kernel is the guest's, not the host's.
  std::string guest_release;
  std::ifstream(fs::path(LIBSHIM_VM_KERNEL).parent_path() / "release") >> guest_release;
  auto uname = s.fx.ctr(s.run({"--rm"}, "uname", {"/bin/uname", "-r"}), 120s);
  CHECK(uname.exit_code == 0);
  CHECK(uname.out == guest_release + "\n");
  struct utsname host {};
  REQUIRE(::uname(&host) == 0);
  CHECK(uname.out != std::string(host.release) + "\n");

  // The guest hands what it frees back to the host: a balloon device with its driver bound,
  // and free page reporting at the agent's block size (order 3: 32 KiB).
  auto balloon = s.fx.ctr(s.run({"--rm"}, "balloon",
                                {"/bin/sh", "-c",
                                 "cat /sys/module/page_reporting/parameters/page_reporting_order; "
                                 "ls /sys/bus/virtio/drivers/virtio_balloon | grep -c '^virtio'"}),
                          120s);
  CHECK(balloon.exit_code == 0);
  CHECK(balloon.out == "3\n1\n");
  CHECK(balloon.err.empty());

  // The guest reaches the host's files only through the share: the container's rootfs.
  std::string host_file = s.fx.dir() + "/host-only";
  std::ofstream(host_file) << "secret\n";
  auto outside = s.fx.ctr(s.run({"--rm"}, "outside", {"/bin/cat", host_file}), 120s);
  CHECK(outside.exit_code == 1);
  CHECK(outside.out.empty());
  CHECK(outside.err.find("No such file or directory") != std::string::npos);

  // stdin round trip, and over 16 MiB of stdout, byte-exact.
  std::string input;
  for (int i = 0; i < 20000; ++i) input += fmt::format("line {}\n", i);
  auto cat = s.fx.ctr(s.run({"--rm"}, "cat", {"/bin/cat"}), 120s, input);
  CHECK(cat.exit_code == 0);
  CHECK(cat.out == input);
  std::string expected;
  for (int i = 1; i <= 2300000; ++i) expected += fmt::format("{}\n", i);
  auto big = s.fx.ctr(s.run({"--rm"}, "big", {"/bin/seq", "1", "2300000"}), 300s);
  CHECK(big.exit_code == 0);
  CHECK(big.out.size() == expected.size());
  CHECK((big.out == expected));
}

// `ctr <args>` inside util-linux `script`, whose terminal is rows x cols (ctr -t needs a
// terminal of its own; it sends that size with ResizePty after Start).
CommandResult ctr_in_terminal(const PrivateContainerd& fx, const std::vector<std::string>& args,
                              int rows, int cols) {
  auto quote = [](const std::string& word) {
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  std::string command = fmt::format("stty rows {} cols {}; exec", rows, cols);
  for (const std::string& word :
       {fx.ctr_bin(), std::string("--address"), fx.grpc_address(), std::string("-n"), fx.ns()}) {
    command += " " + quote(word);
  }
  for (const std::string& word : args) command += " " + quote(word);
  return run_command({"/usr/bin/script", "-qec", command, "/dev/null"}, {.timeout = 120s});
}

// The qemu processes (and their daemons) whose command line names the VM state dir of this
// containerd's pods.
std::vector<int> qemu_pids() {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find("/run/libshim-vm/") != std::string::npos &&
        (cmdline.starts_with("qemu-system") || cmdline.find("virtiofsd") != std::string::npos ||
         cmdline.find("vhost-device-vsock") != std::string::npos))
      pids.push_back(std::stoi(entry.path().filename().string()));
  }
  return pids;
}

// The programs of the processes in the host cgroup `path` (its memory controller's on v1).
std::vector<std::string> programs_in_cgroup(const std::string& path) {
  std::string dir = shim::host_cgroup_version() == shim::CgroupVersion::kV2
                        ? "/sys/fs/cgroup" + path
                        : "/sys/fs/cgroup/memory" + path;
  std::vector<std::string> programs;
  std::ifstream procs(dir + "/cgroup.procs");
  for (std::string pid; std::getline(procs, pid);) {
    std::ifstream in("/proc/" + pid + "/cmdline");
    std::string program;
    std::getline(in, program, '\0');
    programs.push_back(fs::path(program).filename().string());
  }
  std::sort(programs.begin(), programs.end());
  return programs;
}

TEST_CASE("vm: exec, kill, kill --all, pause and resume, ps, containerd restart",
          "[vm-e2e][multi-version]") {
  SKIP_WITHOUT_VM();
  VmSetup s;
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "spin", {"/bin/sleep", "3600"}), 120s).ok());
  REQUIRE(s.wait_status("spin", "RUNNING"));
  // The VM runs in the container's cgroup on the host (ctr's cgroupsPath /<ns>/<id>): the
  // pod's host cost is counted where the pod's is. virtiofsd is two processes.
  const std::string pod_cgroup = fmt::format("/{}/spin", s.fx.ns());
  CHECK(programs_in_cgroup(pod_cgroup) ==
        std::vector<std::string>{"qemu-system-x86_64", "virtiofsd", "virtiofsd"});

  auto exec = s.fx.ctr(s.exec("spin", "e1", {"/bin/sh", "-c", "cat /etc/message; exit 7"}));
  CHECK(exec.exit_code == 7);
  CHECK(exec.out == "a file in the rootfs\n");
  // An exec sees the container's processes (its pid namespace): sleep is PID 1 there.
  auto ps = s.fx.ctr(s.exec("spin", "e2", {"/bin/cat", "/proc/1/cmdline"}));
  CHECK(ps.out == std::string("/bin/sleep\0"
                              "3600\0",
                              16));

  // A signalled exec ends with 128 + the signal; its TaskExit says so.
  auto events = s.fx.subscribe_events();
  REQUIRE(
      s.fx.ctr_ok({"task", "exec", "-d", "--exec-id", "e3", "spin", "/bin/sleep", "3600"}).ok());
  REQUIRE(events->wait_for_line({"/tasks/exec-started", "\"e3\""}, 30s));
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "TERM", "--exec-id", "e3", "spin"}).ok());
  auto e3_exit = events->wait_for_line({"/tasks/exit", "\"e3\""}, 30s);
  REQUIRE(e3_exit);
  CHECK(e3_exit->find("\"exit_status\":143") != std::string::npos);

  REQUIRE(s.fx.ctr_ok({"task", "pause", "spin"}).ok());
  CHECK(s.task_status("spin") == "PAUSED");
  REQUIRE(s.fx.ctr_ok({"task", "resume", "spin"}).ok());
  CHECK(s.task_status("spin") == "RUNNING");
  auto pids = s.fx.ctr_ok({"task", "ps", "spin"});
  CHECK(pids.out.find("PID") != std::string::npos);
  // Metrics are the container's cgroup v2 in the guest, whatever the host's version.
  auto metrics = s.fx.ctr_ok({"task", "metrics", "spin"});
  CHECK(metrics.out.find("pids.current") != std::string::npos);
  CHECK(metrics.out.find("cpu.usage_usec") != std::string::npos);

  // Across a containerd restart the shim still serves the task; kill --all reaches every
  // process of the container (an exec too).
  REQUIRE(
      s.fx.ctr_ok({"task", "exec", "-d", "--exec-id", "e4", "spin", "/bin/sleep", "3600"}).ok());
  s.fx.restart();
  CHECK(s.task_status("spin") == "RUNNING");
  events = s.fx.subscribe_events();
  REQUIRE(s.fx.ctr_ok({"task", "kill", "--all", "-s", "KILL", "spin"}).ok());
  auto e4_exit = events->wait_for_line({"/tasks/exit", "\"e4\""}, 30s);
  REQUIRE(e4_exit);
  CHECK(e4_exit->find("\"exit_status\":137") != std::string::npos);
  auto exit = events->wait_for_line({"/tasks/exit", "\"spin\""}, 30s);
  REQUIRE(exit);
  CHECK(exit->find("\"exit_status\":137") != std::string::npos);
  REQUIRE(s.wait_status("spin", "STOPPED"));
  REQUIRE(s.fx.ctr_ok({"task", "rm", "spin"}).ok());
  // The pod's last task is gone, so is its VM, and its cgroup with it.
  const std::string memory_dir = shim::host_cgroup_version() == shim::CgroupVersion::kV2
                                     ? "/sys/fs/cgroup" + pod_cgroup
                                     : "/sys/fs/cgroup/memory" + pod_cgroup;
  CHECK(wait_until([&] { return !fs::exists(memory_dir); }, 10s));
}

TEST_CASE("vm: a terminal in the guest: the size ctr sends, output, the exit code",
          "[vm-e2e][multi-version]") {
  SKIP_WITHOUT_VM();
  if (::access("/usr/bin/script", X_OK) != 0) LIBSHIM_SKIP("no util-linux script");
  VmSetup s;
  // Waits (up to 10 s) for ctr's ResizePty, then prints the terminal's size.
  const std::string print_size =
      "i=0; until s=$(/bin/busybox stty size 2>/dev/null) && [ \"$s\" != '0 0' ]; do "
      "[ $i -ge 50 ] && break; sleep 0.2; i=$((i+1)); done; echo size=$s; "
      "[ -t 0 ] && [ -t 1 ] && echo on-a-terminal; exit 6";
  std::vector<std::string> args{"run", "--rm", "-t", "--runtime", fs::canonical(kShim).string()};
  for (const auto& f : s.fx.run_flags(false)) args.push_back(f);
  args.insert(args.end(), {"--rootfs", s.rootfs, "tty", "/bin/sh", "-c", print_size});
  auto tty = ctr_in_terminal(s.fx, args, 31, 97);
  CHECK(tty.exit_code == 6);
  CHECK(tty.out.find("size=31 97") != std::string::npos);
  CHECK(tty.out.find("on-a-terminal") != std::string::npos);
}

TEST_CASE("vm: an OOM kill inside the guest: TaskOOM before TaskExit", "[vm-e2e][multi-version]") {
  SKIP_WITHOUT_VM();
  VmSetup s;
  auto events = s.fx.subscribe_events();
  // 64 MiB of tmpfs pages (charged to the cgroup, never reclaimable) written by the init
  // itself in a 32 MiB cgroup: the kernel's copy, fast even under TCG on a busy host.
  auto oom =
      s.fx.ctr(s.run({"--rm", "--memory-limit", std::to_string(32u << 20)}, "oom",
                     {"/bin/sh", "-c", "exec /bin/head -c 67108864 /dev/zero > /dev/shm/fill"}),
               120s);
  CHECK(oom.exit_code == 137);
  CHECK(oom.out.empty());
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"oom\""}, 10s));
  CHECK(event_topics_for(*events, "oom") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/oom", "/tasks/exit",
                                 "/tasks/delete"});
}

TEST_CASE("vm: a guest that panics or hangs ends its pod with status 255 and the reason",
          "[vm-e2e]") {
  SKIP_WITHOUT_VM();
  VmSetup s;
  auto events = s.fx.subscribe_events();
  // A kernel panic in the guest: qemu ends, every process of the pod exits 255.
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "panics", {"/bin/sleep", "3600"}), 120s).ok());
  REQUIRE(s.wait_status("panics", "RUNNING"));
  auto crash =
      s.fx.ctr(s.exec("panics", "crash", {"/bin/sh", "-c", "echo c > /proc/sysrq-trigger"}));
  CHECK(crash.exit_code == 255);
  auto exit = events->wait_for_line({"/tasks/exit", "\"panics\""}, 30s);
  REQUIRE(exit);
  CHECK(exit->find("\"exit_status\":255") != std::string::npos);
  bool ended = shim::test::eventually(
      [&] {
        std::ifstream log(s.fx.log_path());
        std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        return text.find("pod VM ended") != std::string::npos &&
               text.find("console: Kernel panic - not syncing: sysrq triggered crash") !=
                   std::string::npos;
      },
      20s);
  if (!ended) FAIL_CHECK("no 'pod VM ended' with the panic in the log:\n" << s.fx.log_tail(30));
  CHECK(s.fx.ctr_ok({"task", "rm", "panics"}).ok());

  // A guest that stops answering (its qemu stopped): the heartbeat kills it.
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "hangs", {"/bin/sleep", "3600"}), 120s).ok());
  REQUIRE(s.wait_status("hangs", "RUNNING"));
  std::vector<int> vms = qemu_pids();
  for (int pid : vms) ::kill(pid, SIGSTOP);
  auto hung_exit = events->wait_for_line({"/tasks/exit", "\"hangs\""}, 60s);
  REQUIRE(hung_exit);
  CHECK(hung_exit->find("\"exit_status\":255") != std::string::npos);
  std::ifstream log(s.fx.log_path());
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("the guest's agent did not answer for 10 s") != std::string::npos);
  CHECK(s.fx.ctr_ok({"task", "rm", "hangs"}).ok());
}

TEST_CASE("vm: a SIGKILLed shim takes its VM along and delete leaves nothing mounted",
          "[vm-e2e][multi-version]") {
  SKIP_WITHOUT_VM();
  VmSetup s;
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "victim", {"/bin/sleep", "3600"}), 120s).ok());
  REQUIRE(s.wait_status("victim", "RUNNING"));
  std::vector<pid_t> shims = live_shims(fs::canonical(kShim).string(), s.fx.ns());
  REQUIRE(shims.size() == 1);
  pid_t shim = shims[0];
  REQUIRE_FALSE(qemu_pids().empty());
  auto events = s.fx.subscribe_events();
  REQUIRE(::kill(shim, SIGKILL) == 0);
  // containerd sees the shim gone, runs `delete`, and only then publishes the task's
  // exit (runtime/v2/shim.go cleanupAfterDeadShim). The task's status turns UNKNOWN at
  // once, so it cannot tell that the delete action has finished.
  REQUIRE(events->wait_for_line({"/tasks/exit", "\"victim\""}, 30s));
  // SIGKILLed by the shim's parent-death signal or the delete action: gone soon after.
  CHECK(wait_until([] { return qemu_pids().empty(); }, 10s));
  CHECK(s.task_status("victim") != "RUNNING");
  s.fx.ctr({"task", "rm", "victim"});
  // This pod's state dir only: a pod another run left behind must not fail this one.
  std::ifstream mounts("/proc/self/mountinfo");
  std::string text((std::istreambuf_iterator<char>(mounts)), std::istreambuf_iterator<char>());
  const std::string state_dir = shim_vm::pod_state_dir(s.fx.ns(), "victim");
  CHECK(text.find(state_dir + "/") == std::string::npos);
  CHECK_FALSE(fs::exists(state_dir));
  // The delete action removed the VM's host cgroup too.
  const std::string memory_dir = shim::host_cgroup_version() == shim::CgroupVersion::kV2
                                     ? fmt::format("/sys/fs/cgroup/{}/victim", s.fx.ns())
                                     : fmt::format("/sys/fs/cgroup/memory/{}/victim", s.fx.ns());
  CHECK(wait_until([&] { return !fs::exists(memory_dir); }, 10s));
}

TEST_CASE("vm: the agent channel over hybrid vsock, a stranger on it gets nowhere", "[vm-e2e]") {
  SKIP_WITHOUT_VM();
  if (::access(LIBSHIM_VM_VSOCK_DEVICE, X_OK) != 0)
    LIBSHIM_SKIP(fmt::format("no {} (cmake/fetch-vsock-device.sh)", LIBSHIM_VM_VSOCK_DEVICE));
  VmSetup s(ContainerdOptions{.env = {"LIBSHIM_VM_CHANNEL=hybrid-vsock"}});
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "pod", {"/bin/sleep", "3600"}), 120s).ok());
  REQUIRE(s.wait_status("pod", "RUNNING"));

  // The shim's log names the channel, with the daemon's socket for the host's side.
  std::ifstream log(s.fx.log_path());
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  const std::string marker = "channel=\"hybrid vsock ";
  auto at = text.find(marker);
  REQUIRE(at != std::string::npos);
  auto end = text.find(":1024\"", at);
  REQUIRE(end != std::string::npos);
  std::string socket = text.substr(at + marker.size(), end - at - marker.size());
  CHECK(text.find("reason=LIBSHIM_VM_CHANNEL", at) != std::string::npos);

  // The guest has vsock and no virtio-serial port.
  auto devices = s.fx.ctr(s.exec("pod", "devices",
                                 {"/bin/sh", "-c",
                                  "ls /sys/bus/virtio/drivers/vmw_vsock_virtio_transport | "
                                  "grep -c ^virtio; ls /sys/class/virtio-ports | wc -l"}));
  CHECK(devices.exit_code == 0);
  CHECK(devices.out == "1\n0\n");

  // Another host process on the daemon's socket reaches no agent: the agent took the
  // shim's connection and listens no more, so the guest refuses the port.
  {
    shim::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(socket.size() < sizeof address.sun_path);
    std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
    REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    std::string request = "CONNECT 1024\n";
    REQUIRE(::write(fd.get(), request.data(), request.size()) ==
            static_cast<ssize_t>(request.size()));
    pollfd p{fd.get(), POLLIN, 0};
    REQUIRE(::poll(&p, 1, 10'000) == 1);
    char answer[64] = {};
    CHECK(::read(fd.get(), answer, sizeof answer) == 0);  // closed, no "OK <port>"
  }

  // The pod still serves: exec, its exit code and output.
  auto exec = s.fx.ctr(s.exec("pod", "e1", {"/bin/sh", "-c", "echo over vsock; exit 4"}));
  CHECK(exec.exit_code == 4);
  CHECK(exec.out == "over vsock\n");

  // The shim SIGKILLed: qemu, virtiofsd and the vsock daemon go with it.
  std::vector<pid_t> shims = live_shims(fs::canonical(kShim).string(), s.fx.ns());
  REQUIRE(shims.size() == 1);
  REQUIRE(::kill(shims[0], SIGKILL) == 0);
  CHECK(wait_until([&] { return qemu_pids().empty() && s.task_status("pod") != "RUNNING"; }, 30s));
  s.fx.ctr({"task", "rm", "pod"});
}

}  // namespace
}  // namespace shim::test
