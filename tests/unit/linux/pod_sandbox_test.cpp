// The pauseless pod for real (shim/linux/pod_sandbox.h), as root: a netns made with
// `ip netns add`, the shim's loop on the main thread of a forked child (the pod moves
// that thread into other namespaces: never the test runner's), the Sandbox methods called
// from another thread as the service's pool calls them.
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

#include "linux/pod_namespaces.h"
#include "process/posix_spawner.h"
#include "process/signal_watcher.h"
#include "process/signalfd_reaper.h"
#include "shim/clock.h"
#include "shim/fs.h"
#include "shim/linux/pod_sandbox.h"
#include "shim/logger.h"
#include "shim/process/run_command.h"
#include "shim/process/work_pool.h"
#include "support/recording_publisher.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "unit/isolated_child.h"

namespace {

using shim::linux_pod::namespace_inode;
using namespace std::chrono_literals;

struct NoShutdown final : shim::ShutdownControl {
  void request_shutdown() override {}
};

struct RecordingEvents final : shim::SandboxEvents {
  void exited(std::uint32_t status) override {
    exit_status.store(static_cast<int>(status));
    calls.fetch_add(1);
  }
  std::atomic<int> exit_status{-1};
  std::atomic<int> calls{0};
};

// A netns made and removed with iproute2, as CNI's are bind-mounted files.
class TestNetns {
 public:
  TestNetns() : name_(fmt::format("libshim-pod-{}", ::getpid())) {
    ok_ = std::system(fmt::format("ip netns add {}", name_).c_str()) == 0;
  }
  ~TestNetns() {
    if (ok_) (void)std::system(fmt::format("ip netns del {}", name_).c_str());
  }
  bool ok() const { return ok_; }
  std::string path() const { return "/var/run/netns/" + name_; }
  unsigned long inode() const {
    struct stat st {};
    return ::stat(path().c_str(), &st) == 0 ? static_cast<unsigned long>(st.st_ino) : 0;
  }

 private:
  std::string name_;
  bool ok_ = false;
};

std::string read_text(const std::string& path) {
  std::string text;
  if (!shim::read_file(path, &text).ok()) return "<unreadable>";
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string status_field(pid_t pid, const std::string& field) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(field + ":")) return line.substr(field.size() + 2);
  }
  return {};
}

// The process (host pid) whose parent is `parent`, 0 if none.
pid_t child_of(pid_t parent) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (status_field(std::stoi(name), "PPid") == std::to_string(parent)) return std::stoi(name);
  }
  return 0;
}

bool mounted(const std::string& target) {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    if (line.find(" " + target + " ") != std::string::npos) return true;
  }
  return false;
}

template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds limit = 5000ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// A shim's daemon in miniature, in the forked child: loop on the main thread (this one),
// reaper, pool, a bundle as containerd's sandbox controller makes it. `scenario` runs on
// a thread of its own, started before the pod exists (so in the host's namespaces).
class PodHarness {
 public:
  explicit PodHarness(shim_test::ChildReport& report)
      : report_(report),
        blocked_(shim::SignalWatcher::block_in_this_thread({SIGCHLD})),
        signals_(io_.get_executor()),
        reaper_(io_.get_executor(), signals_),
        context_{
            io_.get_executor(),  reaper_, publisher_, clock_, spawner_, pool_, logger_, shutdown_,
            shim::ShimIdentity{}} {
    bundle_ = dir_.sub("state/io.containerd.sandbox.controller.v1.shim/k8s.io/pod-1");
    std::string work = dir_.sub("root/io.containerd.sandbox.controller.v1.shim/k8s.io/pod-1");
    report.check(shim::make_dirs(bundle_, 0711).ok() && shim::make_dirs(work, 0711).ok() &&
                     ::symlink(work.c_str(), (bundle_ + "/work").c_str()) == 0,
                 "bundle");
    report.check(reaper_.start().ok(), "reaper start");
    options_.etc_hosts = dir_.sub("hosts");
    options_.resolv_conf = dir_.sub("resolv.conf");
    report.check(shim::write_file(options_.etc_hosts, "127.0.0.1 localhost\n", 0644).ok() &&
                     shim::write_file(options_.resolv_conf, "nameserver 9.9.9.9\n", 0644).ok(),
                 "host files");
    runtime_ = std::make_unique<shim::linux_pod::PodSandboxRuntime>(context_, options_);
  }

  template <class Scenario>
  void run(Scenario scenario) {
    auto guard = boost::asio::make_work_guard(io_);
    std::thread driver([&] {
      try {
        scenario();
      } catch (const std::exception& e) {
        report_.check(false, std::string("scenario threw: ") + e.what());
      }
      boost::asio::post(io_, [&] {
        reaper_.stop();  // its signalfd read would keep run() going
        signals_.close();
        guard.reset();
        io_.stop();
      });
    });
    io_.run();
    driver.join();
    pool_.stop();
  }

  // Runs `fn` on the loop (the main thread) and returns its result.
  template <class Fn>
  auto on_loop(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    boost::asio::post(io_, [&] { task(); });
    return result.get();
  }
  // Runs `fn` on a pool thread the loop starts now (the service's way).
  template <class Fn>
  auto on_new_pool_thread(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    boost::asio::post(io_, [&] { (void)pool_.post([&] { task(); }); });
    return result.get();
  }

  shim::SandboxConfig config(const shim::cri::PodSandboxConfig& pod, std::string netns) const {
    shim::SandboxConfig config;
    config.id = "pod-1";
    config.bundle = bundle_;
    config.netns_path = std::move(netns);
    config.options.emplace();
    config.options->set_type_url("type.googleapis.com/runtime.v1.PodSandboxConfig");
    config.options->set_value(pod.SerializeAsString());
    return config;
  }
  std::string cri_root_dir() const {
    return dir_.sub("root/io.containerd.grpc.v1.cri/sandboxes/pod-1");
  }
  std::string shm_dir() const {
    return dir_.sub("state/io.containerd.grpc.v1.cri/sandboxes/pod-1/shm");
  }

  shim_test::ChildReport& report_;
  shim::test::TempDir dir_{"pod-ns-"};
  boost::asio::io_context io_{1};
  shim::Status blocked_;
  shim::SignalWatcher signals_;
  shim::SignalfdReaper reaper_;
  shim::testing::RecordingPublisher publisher_;
  shim::SystemClock clock_;
  shim::PosixSpawner spawner_;
  shim::WorkPool pool_{2, std::chrono::milliseconds(200)};
  shim::Logger logger_{std::make_shared<shim::CallbackLogSink>([](std::string_view) {}), clock_};
  NoShutdown shutdown_;
  shim::ServiceContext context_;
  std::string bundle_;
  shim::linux_pod::PodSandboxOptions options_;
  std::unique_ptr<shim::linux_pod::PodSandboxRuntime> runtime_;
  RecordingEvents events_;
};

// What a process spawned from the pool sees: its net, ipc, uts inodes and its hostname.
std::string spawned_view(PodHarness& pod) {
  shim::SpawnRequest request;
  request.path = "/bin/sh";
  request.argv = {"sh", "-c",
                  "stat -L -c %i /proc/self/ns/net /proc/self/ns/ipc /proc/self/ns/uts; hostname"};
  shim::CaptureResult result;
  shim::Status s = shim::run_and_capture(pod.reaper_, pod.spawner_, request, {}, &result);
  return s.ok() ? result.out : "spawn failed: " + s.message();
}

std::string host_view(const std::string& pid) {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return fmt::format("{}\n{}\n{}\n{}\n", namespace_inode(pid, "net"), namespace_inode(pid, "ipc"),
                     namespace_inode(pid, "uts"), name);
}

}  // namespace

TEST_CASE("pod sandbox: the shim's main thread holds the pod's namespaces, a holder its pid 1",
          "[pod_sandbox][root]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root for namespaces");
  TestNetns netns;
  if (!netns.ok()) LIBSHIM_SKIP("ip netns add failed");
  auto outcome = shim_test::run_in_child([&](shim_test::ChildReport& report) {
    PodHarness pod(report);
    const std::string pid = std::to_string(::getpid());
    const std::string host = host_view(pid);
    const std::string host_port = read_text("/proc/sys/net/ipv4/ip_unprivileged_port_start");
    const std::string host_shmmax = read_text("/proc/sys/kernel/shmmax");
    pod.run([&] {
      shim::cri::PodSandboxConfig config;
      config.set_hostname("pod-host");
      auto* sysctls = config.mutable_linux()->mutable_sysctls();
      (*sysctls)["net.ipv4.ip_unprivileged_port_start"] = "80";
      (*sysctls)["kernel.shmmax"] = "12345678";
      config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_pid(
          shim::cri::POD);
      std::unique_ptr<shim::Sandbox> sandbox;
      shim::Status s =
          pod.runtime_->create(pod.config(config, netns.path()), pod.events_, &sandbox);
      if (!report.check(s.ok(), "create: " + s.message())) return;
      shim::SandboxStarted started;
      s = sandbox->start(&started);
      if (!report.check(s.ok(), "start: " + s.message())) return;
      const pid_t holder = static_cast<pid_t>(started.pid);
      report.check(holder > 0 && holder != ::getpid(), "the holder's pid is the sandbox's");

      // The process (its main thread) is in the pod's namespaces.
      report.check(namespace_inode(pid, "net") == netns.inode(), "shim in the CNI netns");
      report.check(namespace_inode(pid, "ipc") != namespace_inode("thread-self", "ipc"),
                   "shim in an IPC namespace of its own");
      report.check(namespace_inode(pid, "uts") != namespace_inode("thread-self", "uts"),
                   "shim in a UTS namespace of its own");
      // The holder: same net, ipc, uts; pid 1 of a new pid namespace.
      const std::string hpid = std::to_string(holder);
      for (const char* kind : {"net", "ipc", "uts"}) {
        report.check(namespace_inode(hpid, kind) == namespace_inode(pid, kind),
                     std::string("holder shares the pod's ") + kind);
      }
      report.check(namespace_inode(hpid, "pid") != namespace_inode(pid, "pid"), "new pid ns");
      report.check(status_field(holder, "NSpid") == fmt::format("{}\t1", holder),
                   "holder is pid 1: NSpid " + status_field(holder, "NSpid"));
      // What the holder costs (LIBSHIM_POD_MEASURE=1 prints it): a forked copy whose pages
      // stay shared with the shim's until either writes them.
      if (std::getenv("LIBSHIM_POD_MEASURE") != nullptr) {
        std::string rollup = read_text(fmt::format("/proc/{}/smaps_rollup", holder));
        std::fprintf(stderr, "holder %d smaps_rollup:\n%s\nthreads: %s\n", holder, rollup.c_str(),
                     status_field(holder, "Threads").c_str());
      }

      // The loop (main thread) sees the pod's hostname and sysctls; this thread the host's.
      std::string inside = pod.on_loop([] {
        char name[256] = {};
        ::gethostname(name, sizeof(name) - 1);
        return fmt::format("{} {} {}", name,
                           read_text("/proc/sys/net/ipv4/ip_unprivileged_port_start"),
                           read_text("/proc/sys/kernel/shmmax"));
      });
      report.check(inside == "pod-host 80 12345678", "pod's view: " + inside);
      report.check(read_text("/proc/sys/net/ipv4/ip_unprivileged_port_start") == host_port &&
                       read_text("/proc/sys/kernel/shmmax") == host_shmmax,
                   "host's sysctls unchanged");
      // A pool thread the loop starts now, and a process spawned from it: the host's.
      std::string pool_view = pod.on_new_pool_thread([] { return host_view("thread-self"); });
      report.check(pool_view == host, "pool thread: " + pool_view + " host: " + host);
      std::string spawned = pod.on_new_pool_thread([&] { return spawned_view(pod); });
      report.check(spawned == host, "spawned: " + spawned + " host: " + host);

      // The pod files CRI mounts.
      report.check(read_text(pod.cri_root_dir() + "/hostname") == "pod-host", "hostname file");
      report.check(read_text(pod.cri_root_dir() + "/resolv.conf") == "nameserver 9.9.9.9",
                   "resolv.conf copied");
      report.check(mounted(pod.shm_dir()), "shm mounted");

      // The holder reaps an orphan of its pid namespace, as the pause container does.
      std::string entered = pod.on_new_pool_thread([&] {
        shim::SpawnRequest request;
        request.path = "/usr/bin/nsenter";
        request.argv = {"nsenter", "-t",      hpid, "-p",
                        "--",      "/bin/sh", "-c", "sleep 2 >/dev/null 2>&1 & echo $!"};
        shim::CaptureResult result;
        shim::Status run = shim::run_and_capture(pod.reaper_, pod.spawner_, request, {}, &result);
        return run.ok() ? result.out : run.message();
      });
      // pid 1 the holder, 2 the shell nsenter forked, 3 its background sleep.
      report.check(entered == "3\n", "orphan is pid 3 in the pod: " + entered);
      pid_t orphan = 0;
      report.check(eventually([&] { return (orphan = child_of(holder)) != 0; }),
                   "the orphan's parent is the holder");
      report.check(
          orphan != 0 && eventually([&] { return !exists(fmt::format("/proc/{}", orphan)); }),
          "the holder reaped the orphan");

      boost::json::object info;
      report.check(sandbox->details(&info).ok(), "details");
      report.check(info["pid"].to_number<std::int64_t>() == holder &&
                       info["pid_holder"].as_bool() && info["netns"].as_string() == netns.path() &&
                       info["pod_files"].as_array().size() == 4,
                   "details: " + boost::json::serialize(info));

      std::uint32_t status = 0;
      s = sandbox->stop(0s, &status);
      report.check(s.ok() && status == 137, fmt::format("stop: {} {}", s.message(), status));
      report.check(!exists(fmt::format("/proc/{}", holder)), "holder gone and reaped");
      s = sandbox->shutdown();
      report.check(s.ok(), "shutdown: " + s.message());
      report.check(!mounted(pod.shm_dir()), "shm unmounted");
      report.check(!exists(pod.cri_root_dir()) && !exists(pod.shm_dir()), "pod files removed");
      report.check(pod.events_.calls.load() == 0, "a holder the pod killed is no sandbox exit");
      sandbox.reset();
      // The namespaces stay with the shim until it exits.
      report.check(namespace_inode(pid, "net") == netns.inode(), "netns kept");
    });
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("pod sandbox: a hostNetwork, hostIPC pod is the shim itself in the host's namespaces",
          "[pod_sandbox][root]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root for namespaces");
  auto outcome = shim_test::run_in_child([&](shim_test::ChildReport& report) {
    PodHarness pod(report);
    const std::string pid = std::to_string(::getpid());
    const std::string host = host_view(pid);
    pod.run([&] {
      shim::cri::PodSandboxConfig config;
      config.set_hostname("ignored-for-host-network");
      auto* namespaces =
          config.mutable_linux()->mutable_security_context()->mutable_namespace_options();
      namespaces->set_network(shim::cri::NODE);
      namespaces->set_ipc(shim::cri::NODE);
      namespaces->set_pid(shim::cri::CONTAINER);
      std::unique_ptr<shim::Sandbox> sandbox;
      (*config.mutable_linux()->mutable_sysctls())["net.core.somaxconn"] = "100";
      shim::Status s = pod.runtime_->create(pod.config(config, ""), pod.events_, &sandbox);
      report.check(s.code() == shim::Code::kInvalidArgument, "net.* refused: " + s.message());
      config.mutable_linux()->mutable_sysctls()->clear();
      s = pod.runtime_->create(pod.config(config, ""), pod.events_, &sandbox);
      if (!report.check(s.ok(), "create: " + s.message())) return;
      shim::SandboxStarted started;
      s = sandbox->start(&started);
      if (!report.check(s.ok(), "start: " + s.message())) return;
      report.check(started.pid == static_cast<std::uint32_t>(::getpid()), "the shim's pid");
      report.check(host_view(pid) == host, "host namespaces and hostname: " + host_view(pid));
      report.check(!exists(pod.shm_dir()), "no shm for a hostIPC pod");
      report.check(read_text(pod.cri_root_dir() + "/hostname") == "ignored-for-host-network",
                   "hostname file has the config's name, as podsandbox writes it");
      std::uint32_t status = 99;
      s = sandbox->stop(0s, &status);
      report.check(s.ok() && status == 0, "stop: exit 0");
      s = sandbox->shutdown();
      report.check(s.ok() && !exists(pod.cri_root_dir()), "shutdown: " + s.message());
    });
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("pod sandbox: a holder that dies by itself ends the sandbox", "[pod_sandbox][root]") {
  if (::geteuid() != 0) LIBSHIM_SKIP("needs root for namespaces");
  auto outcome = shim_test::run_in_child([&](shim_test::ChildReport& report) {
    PodHarness pod(report);
    const std::string pid = std::to_string(::getpid());
    const unsigned long host_net = namespace_inode(pid, "net");
    pod.run([&] {
      shim::cri::PodSandboxConfig config;  // pid POD (the zero value); no netns from CRI
      std::unique_ptr<shim::Sandbox> sandbox;
      shim::Status s = pod.runtime_->create(pod.config(config, ""), pod.events_, &sandbox);
      if (!report.check(s.ok(), "create: " + s.message())) return;
      shim::SandboxStarted started;
      s = sandbox->start(&started);
      if (!report.check(s.ok(), "start: " + s.message())) return;
      report.check(namespace_inode(pid, "net") != host_net, "a fresh netns without a path");
      report.check(::kill(static_cast<pid_t>(started.pid), SIGKILL) == 0, "kill the holder");
      report.check(eventually([&] { return pod.events_.calls.load() == 1; }), "exited reported");
      report.check(pod.events_.exit_status.load() == 137, "with 137");
      s = sandbox->shutdown();
      report.check(s.ok(), "shutdown: " + s.message());
      report.check(pod.events_.calls.load() == 1, "reported once");
    });
  });
  shim_test::require_child_passed(outcome);
}
