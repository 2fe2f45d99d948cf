// The VM runtime class under CRI (containerd 1.6, 1.7, 2.1): a RuntimeClass handler `kvm`
// (runtime_type io.containerd.kvm.v1) whose pods each run in one qemu micro-VM of one
// containerd-shim-kvm-v1: the pause container and two more in the same guest, exit codes
// and CRI logs, ExecSync, stats, the guest's kernel, and nothing left after teardown.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"
#include "support/containerd_binaries.h"
#include "support/subprocess.h"
#include "support/wait_until.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::optional<std::string> vm_unavailable() {
  if (!fs::exists(LIBSHIM_CRI_VM_KERNEL))
    return std::string("no guest kernel (cmake/fetch-kernel.sh)");
  if (!fs::exists(LIBSHIM_CRI_VM_INITRD)) return std::string("no initramfs built");
  if (!fs::exists(LIBSHIM_CRI_VM_SHIM)) return std::string(LIBSHIM_CRI_VM_SHIM) + " not built";
  if (::access("/usr/lib/qemu/virtiofsd", X_OK) != 0) return std::string("no virtiofsd");
  return std::nullopt;
}

// The qemu processes of pods (their command line names a VM state dir).
std::size_t vm_count() {
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.starts_with("qemu-system") && cmdline.find("/run/libshim-vm/") != std::string::npos)
      ++count;
  }
  return count;
}

// The programs of the processes in the host cgroup `relative` (memory controller's).
std::vector<std::string> programs_in_cgroup(const std::string& relative) {
  std::vector<std::string> programs;
  std::istringstream procs(cgroup_value("memory", relative, "cgroup.procs"));
  for (std::string pid; procs >> pid;) {
    std::ifstream in("/proc/" + pid + "/cmdline");
    std::string program;
    std::getline(in, program, '\0');
    programs.push_back(fs::path(program).filename().string());
  }
  std::sort(programs.begin(), programs.end());
  return programs;
}

// The VM runs in the pod's cgroup on the host, so the pod's stats count it: its memory
// (the guest RAM it touched, well over 32 MiB) and its CPU.
void check_vm_in_pod_cgroup(CriClient& client, const std::string& pod_id,
                            const std::string& vm_cgroup) {
  CHECK(programs_in_cgroup(vm_cgroup) ==
        std::vector<std::string>{"qemu-system-x86_64", "virtiofsd", "virtiofsd"});
  std::vector<v1::PodSandboxStats> stats = client.pod_stats(pod_id);
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].linux().memory().working_set_bytes().value() > (32u << 20));
  CHECK(stats[0].linux().cpu().usage_core_nano_seconds().value() > 0);
}

// A container serving its hostname over HTTP on port 8080 (busybox httpd), in the guest.
v1::ContainerConfig web_server() {
  return container_config("web", {"/bin/sh", "-c",
                                  "mkdir -p /srv && hostname >/srv/index.html && "
                                  "exec /bin/busybox httpd -f -p 8080 -h /srv"});
}

// The body of GET / from ip:8080, trying for up to 60 s; "" when nothing answered.
std::string http_get(const std::string& ip) {
  std::string answer;
  wait_until(
      [&] {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        timeval timeout{.tv_sec = 5, .tv_usec = 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(8080);
        ::inet_pton(AF_INET, ip.c_str(), &to.sin_addr);
        std::string got;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
          const char request[] = "GET / HTTP/1.0\r\n\r\n";
          if (::send(fd, request, sizeof request - 1, MSG_NOSIGNAL) > 0) {
            char buffer[4096];
            for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) got.append(buffer, n);
          }
        }
        ::close(fd);
        std::size_t body = got.find("\r\n\r\n");
        if (body == std::string::npos) return false;
        answer = got.substr(body + 4);
        return true;
      },
      60s);
  return answer;
}

// The pod's network reaches into its VM: the guest's eth0 has the IP CNI gave the pod,
// and the host (given an address on the pods' bridge) talks to a server in the guest.
void check_pod_network(CriDaemon& daemon, const Pod& pod, const std::string& web_id) {
  CriClient& client = daemon.client();
  std::string ip = client.pod_status(pod.id).status().network().ip();
  REQUIRE_FALSE(ip.empty());
  v1::ExecSyncResponse addresses =
      client.exec_sync(web_id, {"/bin/busybox", "ip", "-o", "-4", "addr", "show", "eth0"}, 60);
  CHECK(addresses.stdout().find(fmt::format("inet {}/24", ip)) != std::string::npos);
  std::string subnet = daemon.subnet();
  std::string host_ip = subnet.substr(0, subnet.rfind(".0/")) + ".254/24";
  REQUIRE(run_command({"ip", "addr", "add", host_ip, "dev", daemon.bridge()}).ok());
  CHECK(http_get(ip) == pod.config.hostname() + "\n");
}

}  // namespace

TEST_CASE("CRI: a VM pod: pause and two containers in one guest, logs, ExecSync, stats",
          "[cri][multi-version][vm]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  if (auto why = vm_unavailable()) LIBSHIM_SKIP(*why);
  TempDir work("lscri-");
  ImageTarballs images = build_image_tarballs(work.sub("images"));
  // 1.6 ignores runtime_path: containerd-shim-kvm-v1 is found on PATH (runtime_type).
  const std::string shim = fs::canonical(LIBSHIM_CRI_VM_SHIM).string();
  CriDaemon daemon({{"kvm", shim, "", "io.containerd.kvm.v1"}},
                   {fs::path(shim).parent_path().string()}, images);
  CriClient& client = daemon.client();
  std::size_t vms_before = vm_count();

  Pod pod;
  pod.config = pod_config(daemon, unique_name("vm", Side::ours));
  fs::create_directories(pod.config.log_directory());
  pod.id = client.run_pod(pod.config, "kvm");
  std::vector<ShimProcess> shims = shim_processes(daemon.fx().grpc_address());
  REQUIRE(shims.size() == 1);
  CHECK(vm_count() == vms_before + 1);

  // A container that exits: its code and its log, from the guest's kernel.
  std::string release;
  std::ifstream(fs::path(LIBSHIM_CRI_VM_KERNEL).parent_path() / "release") >> release;
  v1::ContainerConfig hello = container_config(
      "hello", {"/bin/sh", "-c", "echo hello from $(uname -r); echo to stderr >&2; exit 3"});
  std::string hello_id = run_container(client, pod, hello);
  v1::ContainerStatus exited = wait_exited(client, hello_id, 120s);
  CHECK(exited.exit_code() == 3);
  CHECK(exited.reason() == "Error");
  wait_log_contains(log_path(pod, hello), "to stderr");
  std::vector<CriLogEntry> log = parse_cri_log(read_file(log_path(pod, hello)));
  CHECK(cri_log_payload(log, "stdout") == "hello from " + release + "\n");
  CHECK(cri_log_payload(log, "stderr") == "to stderr\n");

  // A running container: ExecSync, stats and the pod's network, in the same VM.
  v1::ContainerConfig spin = web_server();
  std::string spin_id = run_container(client, pod, spin);
  v1::ExecSyncResponse exec = client.exec_sync(spin_id, {"/bin/sh", "-c", "echo out; exit 4"}, 60);
  CHECK(exec.exit_code() == 4);
  CHECK(exec.stdout() == "out\n");
  // The pod's UTS and IPC namespaces are the pause container's in the guest: its hostname.
  v1::ExecSyncResponse hostname = client.exec_sync(spin_id, {"/bin/hostname"}, 60);
  CHECK(hostname.stdout() == pod.config.hostname() + "\n");
  check_pod_network(daemon, pod, spin_id);
  v1::ContainerStats stats = client.container_stats(spin_id);
  CHECK(stats.has_memory());
  CHECK(stats.has_cpu());
  CHECK(vm_count() == vms_before + 1);
  CHECK(shim_processes(daemon.fx().grpc_address()).size() == 1);
  // The pause container's cgroup (<cgroup parent>/<pod id>) holds the VM.
  const std::string vm_cgroup = daemon.cgroup_parent() + "/" + pod.id;
  check_vm_in_pod_cgroup(client, pod.id, vm_cgroup);

  // The pod stops and goes, and its VM with it, and the VM's cgroup.
  remove_pod(client, pod);
  CHECK(wait_until([&] { return shim_processes(daemon.fx().grpc_address()).empty(); }, 30s));
  CHECK(wait_until([&] { return vm_count() == vms_before; }, 10s));
  CHECK(cgroup_dirs(vm_cgroup).empty());
}

}  // namespace shim::test::cri

namespace shim::test::cri {

TEST_CASE("CRI: a VM pod without a pause container (sandboxer = \"shim\", containerd 2.x)",
          "[cri][multi-version][vm]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  if (auto why = vm_unavailable()) LIBSHIM_SKIP(*why);
  std::string why_not;
  auto version = probe_containerd(resolve_containerd("", ""), &why_not);
  if (!version) LIBSHIM_SKIP(why_not);
  if (!version->at_least(2, 0)) LIBSHIM_SKIP("sandboxer = \"shim\" needs containerd 2.x");
  TempDir work("lscri-");
  ImageTarballs images = build_image_tarballs(work.sub("images"));
  const std::string shim = fs::canonical(LIBSHIM_CRI_VM_SHIM).string();
  CriDaemon daemon({{"kvm", shim, "shim", "io.containerd.kvm.v1"}},
                   {fs::path(shim).parent_path().string()}, images);
  CriClient& client = daemon.client();
  std::size_t vms_before = vm_count();

  Pod pod;
  pod.config = pod_config(daemon, unique_name("vmsb", Side::ours));
  fs::create_directories(pod.config.log_directory());
  pod.id = client.run_pod(pod.config, "kvm");
  CHECK(vm_count() == vms_before + 1);  // booted by StartSandbox
  CHECK(client.pod_status(pod.id).status().state() == v1::SANDBOX_READY);

  v1::ContainerConfig spin = web_server();
  std::string spin_id = run_container(client, pod, spin);
  v1::ExecSyncResponse exec = client.exec_sync(spin_id, {"/bin/sh", "-c", "uname -r"}, 60);
  std::string release;
  std::ifstream(fs::path(LIBSHIM_CRI_VM_KERNEL).parent_path() / "release") >> release;
  CHECK(exec.stdout() == release + "\n");
  // The container shares the VM's UTS namespace, whose hostname StartSandbox set: the pod's.
  v1::ExecSyncResponse hostname = client.exec_sync(spin_id, {"/bin/hostname"}, 60);
  CHECK(hostname.stdout() == pod.config.hostname() + "\n");
  check_pod_network(daemon, pod, spin_id);
  // No process of the pod on the host runs /pause: the VM is the sandbox.
  for (const ShimProcess& s : shim_processes(daemon.fx().grpc_address())) {
    for (pid_t pid : process_tree(s.pid)) {
      std::ifstream in(fmt::format("/proc/{}/cmdline", pid));
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CHECK_FALSE(cmdline.starts_with("/pause"));
    }
  }
  CHECK(vm_count() == vms_before + 1);
  // StartSandbox put the VM in a cgroup of its own under the pod's.
  const std::string vm_cgroup = daemon.cgroup_parent() + "/libshim-vm-" + pod.id;
  check_vm_in_pod_cgroup(client, pod.id, vm_cgroup);

  remove_pod(client, pod);
  CHECK(wait_until([&] { return shim_processes(daemon.fx().grpc_address()).empty(); }, 30s));
  CHECK(wait_until([&] { return vm_count() == vms_before; }, 10s));
  CHECK(cgroup_dirs(vm_cgroup).empty());
}

}  // namespace shim::test::cri
