// PodSandboxRuntime and its Sandbox: a pod whose namespaces the shim's main thread holds
// (shim/linux/pod_sandbox.h). The pieces: pod_plan (what the config asks), pod_files
// (what CRI bind-mounts), pod_namespaces and pod_sysctls (on the loop), pod_pid_holder and
// pod_holder_state (a shared pid namespace), pod_cgroup (metrics).
#include "shim/linux/pod_sandbox.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>

#include "linux/pod_files.h"
#include "linux/pod_holder_state.h"
#include "linux/pod_namespaces.h"
#include "linux/pod_pid_holder.h"
#include "linux/pod_plan.h"
#include "linux/pod_sysctls.h"
#include "shim/fs.h"
#include "shim/linux/pod_cgroup.h"
#include "shim/logger.h"
#include "shim/process/work_pool.h"
#include "upgrade/state_fields.h"
#include "upgrade/upgrade_support.h"

namespace shim::linux_pod {

namespace json = boost::json;

namespace {

// Runs `fn` on the loop and waits for its Status (a pool thread waiting for the loop; the
// loop never waits for the pool). A loop that stops before running it breaks the promise:
// the wait throws, and the Sandbox call fails with Internal.
template <class Fn>
shim::Status run_on_loop(const boost::asio::any_io_executor& loop, Fn fn) {
  auto promise = std::make_shared<std::promise<shim::Status>>();
  std::future<shim::Status> result = promise->get_future();
  boost::asio::post(loop, [promise, fn = std::move(fn)]() mutable {
    try {
      promise->set_value(fn());
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return result.get();
}

shim::Status host_name(std::string* name) {
  char buffer[256] = {};  // HOST_NAME_MAX is 64; a UTS name is at most 64 bytes
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0)
    return shim::errno_error("gethostname", errno);
  *name = buffer;
  return {};
}

const char* mode_name(bool own) { return own ? "pod" : "host"; }

class PodSandbox final : public shim::Sandbox {
 public:
  PodSandbox(shim::ServiceContext& context, const PodSandboxOptions& options, PodPlan plan,
             PodFilePaths paths, shim::SandboxEvents& events,
             std::optional<shim::pb::Any> pod_config)
      : context_(context),
        options_(options),
        plan_(std::move(plan)),
        paths_(std::move(paths)),
        events_(events),
        pod_config_(std::move(pod_config)),
        logger_(context.logger.with({{"sandbox", plan_.id}})) {}

  ~PodSandbox() override {
    if (holder_ != nullptr) holder_->unwatch();
  }

  shim::Status start(shim::SandboxStarted* started) override;
  shim::Status stop(std::chrono::seconds timeout, std::uint32_t* exit_status) override;
  shim::Status shutdown() override;
  shim::Status metrics(containerd::types::Metric* metric) override;
  shim::Status details(boost::json::object* info) const override;
  // Live upgrade: below.
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds) override;
  shim::Status restore(const boost::json::object& saved);

 private:
  shim::Status write_files();
  shim::Status enter_on_main_thread();
  shim::Status keep_pool_threads_on_host();
  void move_new_pool_threads_to(std::shared_ptr<const HostNamespaces> host);
  std::uint32_t pod_pid() const;

  shim::ServiceContext& context_;
  const PodSandboxOptions& options_;
  const PodPlan plan_;
  const PodFilePaths paths_;
  shim::SandboxEvents& events_;
  const std::optional<shim::pb::Any> pod_config_;  // CreateSandbox's options, for a reopen
  shim::Logger logger_;
  std::vector<std::string> written_;
  bool entered_ = false;
  std::shared_ptr<const HostNamespaces> host_;  // where new pool threads go back to
  std::shared_ptr<HolderState> holder_;         // set on the loop in start(), read after it
};

shim::Status PodSandbox::write_files() {
  std::string name;
  // A pool thread: in the host's UTS namespace (pool threads are kept there), so this is
  // the host's name, as podsandbox's os.Hostname() is.
  if (shim::Status s = host_name(&name); !s.ok()) return s;
  HostFiles host{options_.etc_hosts, options_.resolv_conf};
  shim::Status s = write_pod_files(paths_, plan_.config, name, host, !plan_.own_ipc, &written_);
  if (!s.ok()) return shim::Status(s.code(), fmt::format("pod files: {}", s.message()));
  return {};
}

// Pool threads start from whichever thread posts work, mostly the loop: from now on
// that thread is in the pod's namespaces, so each new pool thread goes back to the host's
// first (and processes spawned from the pool, runc among them, are the host's too).
shim::Status PodSandbox::keep_pool_threads_on_host() {
  std::shared_ptr<const HostNamespaces> host;
  if (shim::Status s = HostNamespaces::open(&host); !s.ok()) return s;
  move_new_pool_threads_to(std::move(host));
  return {};
}

void PodSandbox::move_new_pool_threads_to(std::shared_ptr<const HostNamespaces> host) {
  host_ = host;
  shim::Logger logger = logger_;
  context_.pool.set_thread_start([host, logger] {
    if (shim::Status s = host->enter(); !s.ok()) {
      logger.warn("pool thread stays in the pod's namespaces", {{"error", s.message()}});
    }
  });
}

shim::Status PodSandbox::enter_on_main_thread() {
  if (!on_main_thread()) {
    return shim::failed_precondition(
        "the shim's event loop does not run on the process's main thread: the pod's "
        "namespaces must be entered by the thread /proc/<pid>/ns shows");
  }
  if (shim::Status s = keep_pool_threads_on_host(); !s.ok()) return s;
  entered_ = true;  // from here on the main thread may be in some of the pod's namespaces
  if (shim::Status s = enter_pod_namespaces(plan_); !s.ok()) return s;
  if (shim::Status s = write_sysctls(options_.proc_sys, plan_.sysctls); !s.ok()) return s;
  if (!plan_.shared_pid) return {};
  auto holder = std::make_shared<HolderState>();
  holder->watch(context_.reaper, events_);
  shim::ProcessHandle handle;
  if (shim::Status s = start_pid_holder(&handle); !s.ok()) {
    holder->unwatch();
    return s;
  }
  holder->adopt(std::move(handle));
  holder_ = std::move(holder);
  return {};
}

std::uint32_t PodSandbox::pod_pid() const {
  if (holder_ != nullptr) return static_cast<std::uint32_t>(holder_->pid());
  return static_cast<std::uint32_t>(::getpid());
}

shim::Status PodSandbox::start(shim::SandboxStarted* started) {
  if (shim::Status s = write_files(); !s.ok()) return s;
  shim::Status entered = run_on_loop(context_.executor, [this] { return enter_on_main_thread(); });
  if (!entered.ok()) {
    return shim::Status(entered.code(), fmt::format("start pod: {}", entered.message()));
  }
  started->pid = pod_pid();
  logger_.info("pod started without a pause container",
               {{"pid", started->pid},
                {"netns", plan_.netns_path},
                {"network", mode_name(plan_.own_network)},
                {"ipc", mode_name(plan_.own_ipc)},
                {"pid_holder", holder_ != nullptr ? "yes" : "no"}});
  return {};
}

shim::Status PodSandbox::stop(std::chrono::seconds timeout, std::uint32_t* exit_status) {
  *exit_status = 0;  // nothing of the pod runs but the shim: it simply stops
  if (holder_ == nullptr) return {};
  std::chrono::seconds wait = timeout.count() > 0 ? timeout : options_.holder_exit_timeout;
  return holder_->kill_and_wait(wait, exit_status);
}

shim::Status PodSandbox::shutdown() {
  shim::Status first;
  if (holder_ != nullptr && holder_->running()) {
    std::uint32_t status = 0;
    first = holder_->kill_and_wait(options_.holder_exit_timeout, &status);
  }
  if (holder_ != nullptr) holder_->unwatch();
  if (shim::Status s = remove_pod_files(paths_); !s.ok() && first.ok()) first = s;
  // The namespaces stay with the main thread until the shim exits: setns back would need
  // nothing CRI cares about, and a container still being deleted may yet join them.
  if (!first.ok())
    return shim::Status(first.code(), fmt::format("shutdown pod: {}", first.message()));
  logger_.info("pod shut down", {{"files_removed", written_.size()}});
  return {};
}

shim::Status PodSandbox::metrics(containerd::types::Metric* metric) {
  return pod_cgroup_metrics(options_.cgroup_fs, plan_.cgroup_parent, metric->mutable_data());
}

shim::Status PodSandbox::details(boost::json::object* info) const {
  (*info)["pid"] = entered_ ? pod_pid() : 0;
  (*info)["netns"] = plan_.netns_path;
  (*info)["network"] = mode_name(plan_.own_network);
  (*info)["ipc"] = mode_name(plan_.own_ipc);
  (*info)["uts"] = mode_name(plan_.own_uts);
  (*info)["hostname"] = plan_.hostname;
  (*info)["pid_holder"] = holder_ != nullptr && holder_->running();
  if (holder_ != nullptr) (*info)["holder_pid"] = holder_->pid();
  boost::json::array files;
  for (const std::string& file : written_) files.emplace_back(file);
  (*info)["pod_files"] = std::move(files);
  boost::json::object sysctls;
  for (const auto& [key, value] : plan_.sysctls) sysctls[key] = value;
  (*info)["sysctls"] = std::move(sysctls);
  (*info)["cgroup_parent"] = plan_.cgroup_parent;
  return {};
}

// Live upgrade. The exec keeps what the pod is made of: the main thread's namespaces (the
// loop's thread calls execve), the holder (our child; its parent-death signal is tied to
// that thread) and the files. What the new program needs besides the config: CreateSandbox's
// options, whether the namespaces were entered and the host's to send pool threads back
// to (their fds: the main thread cannot open them again), the holder's pid and pidfd, and
// the files written.
shim::Status PodSandbox::save_for_upgrade(json::object* state, std::vector<int>* fds) {
  json::object saved;
  saved["pod_config"] =
      pod_config_ ? json::value(json::object{{"type_url", pod_config_->type_url()},
                                             {"value", upgrade::hex(pod_config_->value())}})
                  : json::value(nullptr);
  saved["entered"] = entered_;
  json::array files;
  for (const std::string& file : written_) files.emplace_back(file);
  saved["written"] = std::move(files);
  json::value host = nullptr;
  if (host_ != nullptr) {
    const std::array<int, 3> host_fds = host_->fds();
    host = json::array{host_fds[0], host_fds[1], host_fds[2]};
    fds->insert(fds->end(), host_fds.begin(), host_fds.end());
  }
  saved["host_namespaces"] = std::move(host);
  json::value holder = nullptr;
  if (holder_ != nullptr) {
    const HolderState::Saved h = holder_->save();
    holder = json::object{{"pid", h.pid},
                          {"pidfd", h.pidfd},
                          {"killed_by_pod", h.killed_by_pod},
                          {"exit_status", h.exit_status ? json::value(*h.exit_status) : nullptr}};
    if (h.pidfd >= 0) fds->push_back(h.pidfd);
  }
  saved["holder"] = std::move(holder);
  *state = std::move(saved);
  return {};
}

shim::Status PodSandbox::restore(const json::object& saved) {
  const json::value whole = saved;  // StateFields keeps a pointer into its value
  upgrade::StateFields fields(whole, "sandboxes.sandbox.state");
  entered_ = fields.flag("entered");
  const json::array* files = fields.array("written");
  if (!fields.status().ok()) return fields.status();
  for (const json::value& file : *files) {
    if (file.is_string()) written_.emplace_back(file.as_string());
  }
  if (const json::value* host = saved.if_contains("host_namespaces");
      host != nullptr && !host->is_null()) {
    std::array<int, 3> host_fds{-1, -1, -1};
    if (!host->is_array() || host->as_array().size() != 3)
      return shim::failed_precondition("upgrade state: host_namespaces is not three fds");
    for (std::size_t i = 0; i < 3; ++i) {
      const json::value& fd = host->as_array()[i];
      if (fd.is_int64()) host_fds[i] = static_cast<int>(fd.as_int64());
    }
    std::shared_ptr<const HostNamespaces> namespaces;
    if (shim::Status s = HostNamespaces::from_fds(host_fds, &namespaces); !s.ok()) return s;
    move_new_pool_threads_to(std::move(namespaces));
  }
  const json::value* holder = saved.if_contains("holder");
  if (holder == nullptr || holder->is_null()) return {};
  upgrade::StateFields h(*holder, "sandboxes.sandbox.state.holder");
  HolderState::Saved state;
  state.pid = static_cast<pid_t>(h.number("pid"));
  state.pidfd = h.fd("pidfd");
  state.killed_by_pod = h.flag("killed_by_pod");
  if (const json::value* status = holder->as_object().if_contains("exit_status");
      status != nullptr && status->is_int64()) {
    state.exit_status = static_cast<int>(status->as_int64());
  }
  if (!h.status().ok()) return h.status();
  if (!state.exit_status) {
    if (shim::Status s = upgrade::check_unreaped_child(state.pid, "pid holder"); !s.ok()) return s;
  }
  shim::UniqueFd pidfd;
  if (state.pidfd >= 0) {
    pidfd.reset(::fcntl(state.pidfd, F_DUPFD_CLOEXEC, 0));
    if (!pidfd.valid())
      return shim::errno_error(fmt::format("pid holder's pidfd {}", state.pidfd), errno);
  }
  auto holder_state = std::make_shared<HolderState>();
  holder_state->watch(context_.reaper, events_);  // the reaper starts after the restore
  holder_state->restore(state, shim::ProcessHandle(state.pid, pidfd.release()));
  holder_ = std::move(holder_state);
  // The service waits for a reported exit before it saves; should one still have been on
  // its way, reporting it again is harmless (the first report wins).
  if (state.exit_status && !state.killed_by_pod)
    events_.exited(static_cast<std::uint32_t>(*state.exit_status));
  return {};
}

}  // namespace

PodSandboxRuntime::PodSandboxRuntime(shim::ServiceContext& context, PodSandboxOptions options)
    : context_(context), options_(std::move(options)) {}

shim::Status PodSandboxRuntime::create(const shim::SandboxConfig& config,
                                       shim::SandboxEvents& events,
                                       std::unique_ptr<shim::Sandbox>* sandbox) {
  PodPlan plan;
  if (shim::Status s = make_pod_plan(config, &plan); !s.ok()) return s;
  ContainerdDirs dirs;
  if (shim::Status s = containerd_dirs_from_bundle(config.bundle, &dirs); !s.ok()) {
    return shim::Status(s.code(), fmt::format("sandbox {}: {}", config.id, s.message()));
  }
  PodFilePaths paths = PodFilePaths::of(dirs, config.id);
  *sandbox = std::make_unique<PodSandbox>(context_, options_, std::move(plan), std::move(paths),
                                          events, config.options);
  return {};
}

shim::Status PodSandboxRuntime::reopen(const shim::SandboxConfig& config,
                                       const boost::json::object& saved,
                                       shim::SandboxEvents& events,
                                       std::unique_ptr<shim::Sandbox>* sandbox) {
  shim::SandboxConfig full = config;
  if (const json::value* pod_config = saved.if_contains("pod_config");
      pod_config != nullptr && !pod_config->is_null()) {
    upgrade::StateFields fields(*pod_config, "sandboxes.sandbox.state.pod_config");
    shim::pb::Any any;
    any.set_type_url(fields.text("type_url"));
    std::string value;
    if (!upgrade::unhex(fields.text("value"), &value)) fields.fail("value", "hex bytes");
    if (!fields.status().ok()) return fields.status();
    any.set_value(value);
    full.options = std::move(any);
  }
  std::unique_ptr<shim::Sandbox> made;
  if (shim::Status s = create(full, events, &made); !s.ok()) return s;
  if (shim::Status s = static_cast<PodSandbox&>(*made).restore(saved); !s.ok()) {
    return shim::Status(s.code(), fmt::format("sandbox {}: {}", config.id, s.message()));
  }
  *sandbox = std::move(made);
  return {};
}

}  // namespace shim::linux_pod
