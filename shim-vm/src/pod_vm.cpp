#include "pod_vm.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "host_cgroup.h"
#include "shim/fs.h"
#include "shim/logger.h"
#include "shim/process/reaper.h"
#include "shim/unique_fd.h"
#include "state_dir.h"
#include "vm_network.h"

namespace shim_vm {

using shim::Code;
using shim::Status;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::seconds kHeartbeat{5};
constexpr std::chrono::seconds kHeartbeatTimeout{10};

Status sys_error(std::string_view what) {
  return Status(Code::kInternal, fmt::format("{}: {}", what, std::strerror(errno)));
}

// The shared directory: a bind mount of itself, shared, so later mounts under it
// propagate to virtiofsd's namespace (which it makes a slave of this one).
Status make_shared_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("mkdir " + dir);
  if (::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0)
    return sys_error("bind mount " + dir);
  // Private first: a peer of the parent's group would not be a group of its own.
  if (::mount(nullptr, dir.c_str(), nullptr, MS_PRIVATE, nullptr) != 0)
    return sys_error("make " + dir + " private");
  if (::mount(nullptr, dir.c_str(), nullptr, MS_SHARED, nullptr) != 0)
    return sys_error("make " + dir + " shared");
  return {};
}

// Spawns on the loop thread (see the header) and waits here.
Status spawn_from_loop(shim::ServiceContext& context, const shim::SpawnRequest& request,
                       shim::ClaimedProcess* process) {
  std::promise<Status> done;
  auto result = done.get_future();
  boost::asio::post(context.executor, [&] {
    done.set_value(context.reaper.spawn_claimed(context.spawner, request, process));
  });
  return result.get();
}

std::string tail_of(const std::string& path, std::size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    lines.push_back(line);
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : " | ") + line;
  return out;
}

// What the guest's console says of its end: the panic line if it panicked, else its
// last lines.
std::string console_summary(const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("Kernel panic");
    if (at != std::string::npos) return line.substr(at);
  }
  return tail_of(path, 3);
}

std::vector<std::string> qemu_argv(const VmSettings& s, const std::string& dir) {
  std::string memory = fmt::format("{}M", s.memory_mib);
  std::vector<std::string> argv = {
      s.qemu,
      "-machine",
      "microvm,memory-backend=mem",
      "-accel",
      s.accel == "tcg" ? fmt::format("tcg,tb-size={}", s.tcg_cache_mib) : "kvm",
      "-cpu",
      s.accel == "kvm" ? "host" : "max",
      "-smp",
      std::to_string(s.cpus),
      "-m",
      memory,
      "-nodefaults",
      "-no-user-config",
      "-display",
      "none",
      "-no-reboot",
      "-serial",
      "file:" + dir + "/console.log",
      "-kernel",
      s.kernel,
      "-initrd",
      s.initrd,
      "-append",
      kernel_command_line(s),
      "-global",
      "virtio-mmio.force-legacy=false",
      "-object",
      fmt::format("memory-backend-memfd,id=mem,size={},share=on", memory),
      "-chardev",
      fmt::format("socket,id=vfs,path={}/vfs.sock", dir),
      "-device",
      "vhost-user-fs-device,chardev=vfs,tag=shared",
  };
  // Free page reporting: what the guest frees goes back to the host (the agent sets the
  // block size).
  argv.insert(argv.end(), {"-device", "virtio-balloon-device,free-page-reporting=on"});
  return argv;
}

shim::SpawnRequest daemon_request(std::vector<std::string> argv, int log_fd,
                                  const shim::ContainerCgroup* cgroup) {
  shim::SpawnRequest request;
  if (cgroup != nullptr) request.cgroup_procs = cgroup->procs_files();
  request.path = argv.front();
  request.argv = std::move(argv);
  request.fds = {{1, log_fd}, {2, log_fd}};
  request.new_process_group = true;
  request.parent_death_signal = SIGKILL;  // the pod dies with its shim
  return request;
}

// The start time of `pid` (/proc/<pid>/stat, field 22): with the pid, a process's identity
// (a pid alone may be reused). "" when there is no such process or it has ended (a
// zombie, field 3) or is ending (PF_EXITING in the flags, field 9): a SIGKILLed shim's
// socket closes, and containerd runs the `delete` action, before it is a zombie.
std::string process_start_time(pid_t pid) {
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING (include/linux/sched.h)
  std::string stat;
  if (!shim::read_file(fmt::format("/proc/{}/stat", pid), &stat).ok()) return {};
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string state, field;
  if (!(fields >> state) || state == "Z" || state == "X") return {};
  for (int i = 4; i <= 22 && fields >> field; ++i) {
    if (i == 9 && (std::strtoul(field.c_str(), nullptr, 10) & kExiting) != 0) return {};
  }
  return field;
}

// Who runs the pod: <state dir>/shim, "<pid> <start time>", read by clean_up().
Status record_shim(const std::string& state_dir) {
  pid_t self = ::getpid();
  return shim::write_file(state_dir + "/shim", fmt::format("{} {}", self, process_start_time(self)),
                          0600);
}

}  // namespace

void PodVm::join_cgroup(const std::string& path) {
  if (path.empty()) return;
  Status made = make_vm_cgroup(path, state_dir_ + "/cgroup", &cgroup_, &cgroup_owned_);
  if (made.ok()) return;
  cgroup_.reset();
  context_->logger.warn("pod VM in the shim's cgroup", {{"error", made.message()}});
}

Status PodVm::boot(shim::ServiceContext& context, const VmSettings& settings,
                   const std::string& state_dir, const VmPlacement& where,
                   std::unique_ptr<PodVm>* out) {
  std::unique_ptr<PodVm> vm(new PodVm());
  vm->context_ = &context;
  vm->settings_ = settings;
  vm->state_dir_ = state_dir;
  vm->shared_dir_ = state_dir + "/shared";
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) return Status(Code::kInternal, fmt::format("mkdir {}: {}", state_dir, ec.message()));
  ::chmod(state_dir.c_str(), 0700);
  if (Status s = make_shared_dir(vm->shared_dir_); !s.ok()) return s;
  std::unique_ptr<AgentChannel> channel;
  if (Status s = AgentChannel::prepare(settings, state_dir, vm->shared_dir_, &channel); !s.ok())
    return s;
  if (Status s = record_shim(state_dir); !s.ok()) return s;
  if (channel->kind() != settings.channel) {  // vsock fell back: the guest boots for serial
    vm->settings_.channel = channel->kind();
    vm->settings_.initrd = settings.serial_initrd;
  }
  context.logger.info("agent channel",
                      {{"channel", channel->describe()}, {"reason", channel->reason()}});
  vm->join_cgroup(where.host_cgroup);
  VmNetwork network;
  if (!where.netns_path.empty()) {
    // A failure leaves nothing plumbed (plumb_pod_network undoes it).
    if (Status s = plumb_vm_network(where.netns_path, &network); !s.ok()) return s;
    vm->netns_path_ = where.netns_path;  // undone by stop()
    vm->network_ = network.network;
    // For the delete action after a shim that died (clean_up).
    shim::write_file(state_dir + "/network", network_record(where.netns_path, network.network),
                     0600)
        .ignore_error();  // without it a dead shim's redirects stay until CRI drops the netns
    context.logger.info("pod network for the VM",
                        {{"netns", where.netns_path}, {"interfaces", describe(network.network)}});
  }

  auto deadline = Clock::now() + settings.boot_timeout;
  shim::ClaimedProcess qemu;
  if (Status s = vm->start_daemons(network, *channel, deadline, &qemu); !s.ok()) return s;
  network.taps.clear();  // qemu has them: the taps go with it
  if (Status s = vm->connect_agent(*channel, qemu, deadline); !s.ok()) return s;
  // Also without interfaces: the guest's lo goes up.
  agent::Empty answer;
  if (Status s = vm->agent_->sync("SetupNetwork", setup_network_request(network.network), &answer);
      !s.ok())
    return s;
  vm->shared_->qemu = qemu.pid;
  // Two calls waiting, so that while one's answer is on its way an OOM kill still goes
  // out at once, before the exit it caused.
  next_oom(vm->agent_, vm->shared_);
  next_oom(vm->agent_, vm->shared_);
  heartbeat(context.executor, vm->agent_, vm->shared_);
  *out = std::move(vm);
  return {};
}

Status PodVm::spawn_daemon(const char* name, std::vector<std::string> argv, int log_fd,
                           const std::string& socket, Clock::time_point deadline) {
  // A socket left from before would pass for the new daemon's.
  if (::unlink(socket.c_str()) != 0 && errno != ENOENT) return sys_error("unlink " + socket);
  shim::ClaimedProcess daemon;
  if (Status s = spawn_from_loop(*context_, daemon_request(std::move(argv), log_fd, cgroup_.get()),
                                 &daemon);
      !s.ok())
    return Status(s.code(), fmt::format("start {}: {}", name, s.message()));
  daemons_.push_back({daemon.pid, daemon.exit});
  shim::write_file(fmt::format("{}/{}.pid", state_dir_, name), std::to_string(daemon.pid), 0600)
      .ignore_error();
  // qemu needs its socket: the daemon makes it once it listens.
  while (::access(socket.c_str(), F_OK) != 0) {
    if (daemon.exit.ready() || Clock::now() > deadline) {
      return Status(Code::kUnavailable,
                    fmt::format("{} did not start: {}", name, tail_of(state_dir_ + "/vm.log", 3)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return {};
}

Status PodVm::start_daemons(const VmNetwork& network, const AgentChannel& channel,
                            Clock::time_point deadline, shim::ClaimedProcess* qemu) {
  const std::string& dir = state_dir_;
  shim::UniqueFd log(
      ::open((dir + "/vm.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log.valid()) return sys_error("open vm.log");
  std::vector<std::string> vfs_argv = {settings_.virtiofsd,
                                       "--socket-path=" + dir + "/vfs.sock",
                                       "-o",
                                       "source=" + shared_dir_,
                                       "-o",
                                       "cache=auto"};
  if (Status s = spawn_daemon("virtiofsd", vfs_argv, log.get(), dir + "/vfs.sock", deadline);
      !s.ok())
    return s;
  if (std::vector<std::string> argv = channel.daemon_argv(); !argv.empty()) {
    if (Status s = spawn_daemon("vsockd", argv, log.get(), channel.daemon_socket(), deadline);
        !s.ok())
      return s;
  }

  // qemu's fds from 3: the taps, then the vhost-vsock fd.
  constexpr int kFirstTapFd = 3;
  int vhost_fd_number = kFirstTapFd + static_cast<int>(network.taps.size());
  std::vector<std::string> argv = qemu_argv(settings_, dir);
  std::vector<std::string> channel_args = channel.qemu_args(vhost_fd_number);
  argv.insert(argv.end(), channel_args.begin(), channel_args.end());
  std::vector<std::string> nics = qemu_nic_args(network.network, kFirstTapFd);
  argv.insert(argv.end(), nics.begin(), nics.end());
  shim::SpawnRequest request = daemon_request(std::move(argv), log.get(), cgroup_.get());
  for (std::size_t i = 0; i < network.taps.size(); ++i)
    request.fds.emplace_back(kFirstTapFd + static_cast<int>(i), network.taps[i].get());
  if (channel.vhost_fd() >= 0) request.fds.emplace_back(vhost_fd_number, channel.vhost_fd());
  if (Status s = spawn_from_loop(*context_, request, qemu); !s.ok())
    return Status(s.code(), fmt::format("start qemu: {}", s.message()));
  qemu_pid_ = qemu->pid;
  qemu_exit_ = qemu->exit;
  shim::write_file(dir + "/qemu.pid", std::to_string(qemu->pid), 0600).ignore_error();
  return {};
}

Status PodVm::connect_agent(AgentChannel& agent_channel, const shim::ClaimedProcess& qemu,
                            Clock::time_point deadline) {
  shim::UniqueFd channel;
  const shim::ExitFuture* daemon =
      agent_channel.daemon_argv().empty() ? nullptr : &daemons_.back().exit;
  Status status = agent_channel.connect(qemu.pid, deadline, qemu.exit, daemon, &channel);
  if (!status.ok()) {
    std::string console = tail_of(state_dir_ + "/console.log", 5);
    std::string qemu_log = tail_of(state_dir_ + "/vm.log", 3);
    return Status(status.code(),
                  fmt::format("boot the pod's VM ({}, agent channel {}): {}; console: {}; qemu: {}",
                              settings_.accel, agent_channel.describe(), status.message(), console,
                              qemu_log));
  }
  auto client = shim::ttrpc::TtrpcClient::create(context_->executor);
  std::promise<Status> adopted;
  client->adopt(channel.release(), [&](Status s) { adopted.set_value(s); });
  if (Status s = adopted.get_future().get(); !s.ok()) return s;
  agent_ = std::make_shared<AgentClient>(client);
  agent::HelloRequest hello;
  hello.set_version(1);
  agent::HelloResponse answer;
  if (Status s = agent_->sync("Hello", hello, &answer); !s.ok()) return s;
  if (answer.version() != 1) {
    return Status(Code::kFailedPrecondition,
                  fmt::format("the agent speaks protocol version {}, want 1", answer.version()));
  }
  kernel_release_ = answer.kernel_release();
  return {};
}

void PodVm::watch_oom(const std::string& id, std::shared_ptr<shim::InstanceEvents> events) {
  std::lock_guard lock(shared_->mutex);
  shared_->oom_events[id] = std::move(events);
}

void PodVm::forget_oom(const std::string& id) {
  std::lock_guard lock(shared_->mutex);
  shared_->oom_events.erase(id);
}

// stop() closes the client, which fails the call in flight and so ends the loop.
void PodVm::next_oom(std::shared_ptr<AgentClient> agent, std::shared_ptr<Shared> shared) {
  agent->async<agent::OomEvent>("NextOom", agent::Empty(),
                                [agent, shared](Status status, agent::OomEvent event) {
                                  if (!status.ok() || shared->stopped) return;
                                  std::shared_ptr<shim::InstanceEvents> events;
                                  {
                                    std::lock_guard lock(shared->mutex);
                                    auto it = shared->oom_events.find(event.id());
                                    if (it != shared->oom_events.end()) events = it->second;
                                  }
                                  if (events) events->out_of_memory();
                                  next_oom(agent, shared);
                                });
}

PodVm::~PodVm() { stop(); }

std::string PodVm::guest_path(const std::string& host_path) const {
  return "/run/shared" + host_path.substr(shared_dir_.size());
}

void PodVm::heartbeat(boost::asio::any_io_executor executor, std::shared_ptr<AgentClient> agent,
                      std::shared_ptr<Shared> shared) {
  auto timer = std::make_shared<boost::asio::steady_timer>(executor, kHeartbeat);
  timer->async_wait([executor, agent, shared, timer](boost::system::error_code error) {
    if (error || shared->stopped) return;
    agent::HelloRequest hello;
    hello.set_version(1);
    agent->async<agent::HelloResponse>(
        "Hello", hello,
        [executor, agent, shared](Status status, agent::HelloResponse) {
          if (shared->stopped) return;
          if (status.ok()) return heartbeat(executor, agent, shared);
          if (status.code() != Code::kDeadlineExceeded) return;  // the channel ended: qemu did
          {
            std::lock_guard lock(shared->mutex);
            shared->hung =
                fmt::format("the guest's agent did not answer for {} s", kHeartbeatTimeout.count());
          }
          ::kill(shared->qemu, SIGKILL);  // alive: its channel still is
        },
        kHeartbeatTimeout);
  });
}

void PodVm::on_exit(std::function<void(std::string reason)> callback) {
  qemu_exit_.async_wait(context_->executor, [shared = shared_, dir = state_dir_,
                                             callback = std::move(callback)](
                                                std::optional<shim::ProcessExit> exit) {
    if (shared->stopped) return;
    std::string console = console_summary(dir + "/console.log");
    std::string hung;
    {
      std::lock_guard lock(shared->mutex);
      hung = shared->hung;
    }
    if (!hung.empty()) return callback(fmt::format("the pod's VM was killed: {}", hung));
    callback(fmt::format("the pod's VM ended (qemu exit status {}){}{}", exit ? exit->status : -1,
                         console.empty() ? "" : "; console: ", console));
  });
}

// No wait for their exits: the shim may be ending (its loop, which reaps, stopped); the
// share is unmounted lazily whoever still holds it.
void PodVm::stop(Reaping reaping) {
  if (shared_->stopped.exchange(true)) return;
  if (agent_) agent_->close();
  // Not once reaped: the pid may be another process's by now.
  if (qemu_pid_ > 0 && !qemu_exit_.ready()) ::kill(qemu_pid_, SIGKILL);
  for (const Daemon& daemon : daemons_) {
    if (!daemon.exit.ready()) ::kill(daemon.pid, SIGKILL);
  }
  // The netns works again without the VM (CRI reuses none, but `ctr run --with-ns` may).
  if (!netns_path_.empty()) {
    if (Status s = shim::unplumb_pod_network(netns_path_, network_); !s.ok() && context_)
      context_->logger.warn("pod network not restored", {{"error", s.message()}});
  }
  // Killed processes leave their cgroup once reaped (end_vm_cgroup).
  if (cgroup_ && cgroup_owned_) {
    if (Status s = end_vm_cgroup(*cgroup_, reaping == Reaping::kHere); !s.ok() && context_)
      context_->logger.warn("pod VM cgroup not removed", {{"error", s.message()}});
  }
  remove_state_dir(state_dir_);
}

namespace {

// The pid in `state_dir`/`name` if that process still runs this pod's program (a recycled
// pid runs something else, whose command line does not name the state dir); else -1.
pid_t pod_process(const std::string& state_dir, const char* name) {
  std::string text;
  if (!shim::read_file(state_dir + "/" + name, &text).ok()) return -1;
  pid_t pid = static_cast<pid_t>(std::strtol(text.c_str(), nullptr, 10));
  std::string cmdline;
  if (pid <= 0 || !shim::read_file(fmt::format("/proc/{}/cmdline", pid), &cmdline).ok() ||
      cmdline.find(state_dir) == std::string::npos)
    return -1;
  return pid;
}

}  // namespace

// containerd runs `delete` for a task whose connection it dropped, also when the pod's
// shim still serves the pod's other containers (1.6 after a grouped task's Delete): then
// nothing of the pod is touched. Only when the shim is gone does the VM go.
bool PodVm::clean_up(const std::string& state_dir, std::string* error) {
  // The shim that booted the pod, by pid and start time (also after its binary was
  // replaced on disk). qemu dies with it (parent-death signal), but maybe not yet: the
  // action runs as soon as containerd saw the shim's socket close.
  std::string shim;
  if (shim::read_file(state_dir + "/shim", &shim).ok()) {
    std::istringstream fields(shim);
    pid_t pid = 0;
    std::string started;
    fields >> pid >> started;
    if (pid > 0 && !started.empty() && process_start_time(pid) == started) return false;
  } else if (pod_process(state_dir, "qemu.pid") > 0) {
    return false;  // no record: a running qemu means a running shim
  }
  for (const char* name : {"qemu.pid", "virtiofsd.pid", "vsockd.pid"}) {
    if (pid_t pid = pod_process(state_dir, name); pid > 0) ::kill(pid, SIGKILL);
  }
  std::string cgroup_dirs;
  if (shim::read_file(state_dir + "/cgroup", &cgroup_dirs).ok()) {
    if (Status s = remove_cgroup_dirs(cgroup_dirs); !s.ok()) *error = s.message();
  }
  std::string network;
  if (shim::read_file(state_dir + "/network", &network).ok()) {
    if (Status s = unplumb_recorded(network); !s.ok())
      *error += (error->empty() ? "" : "; ") + s.message();
  }
  remove_state_dir(state_dir);
  return true;
}

}  // namespace shim_vm
