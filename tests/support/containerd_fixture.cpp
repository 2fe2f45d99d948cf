#include "support/containerd_fixture.h"

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace shim::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kGoShimSocketDir = "/run/containerd/s";
constexpr const char* kDefaultRuncRoot = "/run/containerd/runc";

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string basename_of(const std::string& path) { return fs::path(path).filename().string(); }

// Plugins a task-level test never needs; fewer plugins, faster and quieter start. With
// `cri` the CRI plugins stay.
std::vector<std::string> disabled_plugins(const ContainerdVersion& version, bool cri) {
  std::vector<std::string> ids = {
      "io.containerd.snapshotter.v1.btrfs",      "io.containerd.snapshotter.v1.aufs",
      "io.containerd.snapshotter.v1.zfs",        "io.containerd.snapshotter.v1.devmapper",
      "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"};
  // NRI (on by default in 2.x) would listen on the host-wide /var/run/nri/nri.sock.
  if (version.at_least(1, 7)) ids.push_back("io.containerd.nri.v1.nri");
  if (version.major >= 2) ids.push_back("io.containerd.snapshotter.v1.erofs");
  if (cri) return ids;
  ids.push_back("io.containerd.grpc.v1.cri");
  if (version.major >= 2) {
    // 2.x split CRI into these; the sandbox-controllers gRPC service fails to load (a
    // logged error) once the podsandbox controller is off, so it goes too.
    ids.insert(ids.end(), {"io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
                           "io.containerd.podsandbox.controller.v1.podsandbox",
                           "io.containerd.sandbox.controller.v1.shim",
                           "io.containerd.grpc.v1.sandbox-controllers"});
  }
  return ids;
}

// argv of a live process, or empty.
std::vector<std::string> process_argv(const std::string& pid) {
  std::string raw = read_text(fmt::format("/proc/{}/cmdline", pid));
  std::vector<std::string> argv;
  std::size_t start = 0;
  while (start < raw.size()) {
    std::size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    argv.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

bool has_flag_value(const std::vector<std::string>& argv, std::string_view value) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if ((argv[i] == "-address" || argv[i] == "--address") && argv[i + 1] == value) return true;
  }
  return false;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_path(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out.push_back(static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

// The address in a bundle: `address` (shim-written, 1.x) or bootstrap.json (2.x).
std::string recorded_shim_address(const fs::path& bundle) {
  std::string address = read_text((bundle / "address").string());
  if (!address.empty()) return address;
  const std::string bootstrap = read_text((bundle / "bootstrap.json").string());
  if (bootstrap.empty()) return {};
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(bootstrap, ec);
  if (ec || !parsed.is_object()) return {};
  const boost::json::value* field = parsed.as_object().if_contains("address");
  if (field == nullptr || !field->is_string()) return {};
  return std::string(field->as_string());
}

}  // namespace

std::optional<std::string> containerd_unavailable(const ContainerdOptions& options) {
  std::string why;
  if (!probe_containerd(resolve_containerd(options.containerd_bin, options.ctr_bin), &why)) {
    return why;
  }
  // An `integration-crun:` run whose runtime cannot run here is skipped as well, and so
  // is a `sanitized:` one whose shims are not built.
  if (auto binary = runc_binary_under_test()) {
    if (auto why = runtime_binary_unavailable(*binary)) return why;
  }
  return sanitized_shims_unavailable();
}

std::string go_shim_debug_socket_path(std::string_view grpc_address, std::string_view ns,
                                      std::string_view id) {
  return go_shim_socket_path(grpc_address, ns, fmt::format("{}/debug", id));
}

std::string go_shim_socket_path(std::string_view grpc_address, std::string_view ns,
                                std::string_view id) {
  CommandOptions options;
  options.stdin_data = fmt::format("{}/{}/{}", grpc_address, ns, id);
  CommandResult sum = run_command({"sha256sum"}, options);
  if (!sum.ok() || sum.out.size() < 64) {
    throw std::runtime_error(fmt::format("sha256sum: {}", sum.describe()));
  }
  return fmt::format("{}/{}", kGoShimSocketDir, sum.out.substr(0, 64));
}

PrivateContainerd::PrivateContainerd(ContainerdOptions options)
    : options_(std::move(options)), dir_("lsc-") {
  const std::string suffix = basename_of(dir_.path()).substr(4);
  ns_ = options_.ns.empty() ? fmt::format("libshim-{}", suffix) : options_.ns;
  grpc_address_ = dir_.sub("c.sock");
  ttrpc_address_ = grpc_address_ + ".ttrpc";
  const ContainerdBinaries bins = resolve_containerd(options_.containerd_bin, options_.ctr_bin);
  containerd_bin_ = bins.containerd;
  ctr_bin_ = bins.ctr;
  std::string why;
  std::optional<ContainerdVersion> version = probe_containerd(bins, &why);
  if (!version) throw std::runtime_error(fmt::format("{}: {}", kSkipMarker, why));
  check_expected_containerd(*version, containerd_bin_);
  version_ = *version;
  for (const char* sub : {"root", "state", "fifo", "runc", "opt"}) {
    fs::create_directories(dir_.sub(sub));
  }
  if (sanitized_shim_build_dir()) {
    require_sanitized_shims();
    sanitizer_dir_ = dir_.sub("sanitizer");
    fs::create_directories(sanitizer_dir_);
  }
  write_config();
  if (options_.start) start();
}

PrivateContainerd::~PrivateContainerd() {
  auto guarded = [](auto&& step) {
    try {
      step();
    } catch (...) {
      // Cleanup keeps going: every later step removes more leftovers.
    }
  };
  guarded([this] {
    if (running()) cleanup_tasks();
  });
  // Deleted tasks' shims exit by themselves now; their leak checks run at that exit.
  guarded([this] { wait_for_sanitized_shims(grpc_address_, 10s); });
  guarded([this] { stop(); });
  guarded([this] { kill_strays(); });
  guarded([this] { fail_on_sanitizer_reports(); });
  guarded([this] { remove_cgroups(); });
  guarded([this] { unmount_all(); });
  guarded([this] {
    if (options_.ns.empty()) fs::remove_all(fmt::format("{}/{}", kDefaultRuncRoot, ns_));
  });
  guarded([this] { dir_.remove(); });
}

void PrivateContainerd::write_config() const {
  std::vector<std::string> quoted;
  for (const auto& id : disabled_plugins(version_, options_.cri)) {
    quoted.push_back(fmt::format("\"{}\"", id));
  }
  // 2.x migrates a version 2 file, but the CRI sections are written for version 3 there.
  const int config_version = options_.cri && version_.major >= 2 ? 3 : 2;
  std::ofstream out(config_path());
  out << fmt::format(
      "version = {}\n"
      "root = \"{}\"\n"
      "state = \"{}\"\n"
      "disabled_plugins = [{}]\n"
      "\n[grpc]\n  address = \"{}\"\n"
      "\n[ttrpc]\n  address = \"{}\"\n"
      "\n[debug]\n  level = \"debug\"\n"
      "\n[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{}\"\n",
      config_version, root_dir(), state_dir(), fmt::join(quoted, ", "), grpc_address_,
      ttrpc_address_, dir_.sub("opt"));
  out << options_.extra_config << "\n";
  if (!out) throw std::runtime_error(fmt::format("writing {} failed", config_path()));
}

std::string PrivateContainerd::daemon_path() const {
  std::vector<std::string> dirs = options_.path_prepend;
  const std::string path = env_or("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
  // containerd looks shims up in PATH before its own dir: without this a cached 1.7/2.1
  // containerd would start the system's (1.6) Go shim.
  dirs.push_back(fs::path(containerd_bin_).parent_path().string());
  dirs.push_back(path);
  return fmt::format("{}", fmt::join(dirs, ":"));
}

void PrivateContainerd::start() {
  if (running()) return;
  SpawnOptions spawn;
  spawn.stdout_path = log_path();
  spawn.env.push_back("PATH=" + daemon_path());
  for (const std::string& entry : options_.env) spawn.env.push_back(entry);
  // containerd passes its environment to the shims it starts (sanitized mode only).
  if (!sanitizer_dir_.empty()) {
    for (std::string& entry : sanitizer_env(sanitizer_dir_)) spawn.env.push_back(std::move(entry));
  }
  daemon_ = ChildProcess({containerd_bin_, "--config", config_path()}, spawn);

  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  for (;;) {
    if (!daemon_.running()) {
      throw std::runtime_error(
          fmt::format("containerd exited with status {} while starting; "
                      "log tail:\n{}",
                      daemon_.exit_status().value_or(-1), log_tail()));
    }
    if (ctr({"version"}, 5s).ok()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      daemon_.kill();
      throw std::runtime_error(
          fmt::format("containerd did not answer `ctr version` within "
                      "{} ms; log tail:\n{}",
                      options_.start_timeout.count(), log_tail()));
    }
    std::this_thread::sleep_for(100ms);
  }
  // Make the namespace exist so it can be labelled (subscribe_events) before any task.
  CommandResult created = ctr({"namespaces", "create", ns_});
  if (!created.ok() && created.err.find("already exists") == std::string::npos) {
    throw std::runtime_error(fmt::format("ctr namespaces create: {}", created.describe()));
  }
}

void PrivateContainerd::stop() {
  if (daemon_.valid()) daemon_.terminate(10s);
}

void PrivateContainerd::kill9() {
  if (daemon_.valid()) daemon_.kill();
}

void PrivateContainerd::restart() {
  stop();
  start();
}

bool PrivateContainerd::running() { return daemon_.running(); }

CommandResult PrivateContainerd::ctr(const std::vector<std::string>& args,
                                     std::chrono::milliseconds timeout,
                                     std::string stdin_data) const {
  std::vector<std::string> argv = {ctr_bin_, "--address", grpc_address_, "-n", ns_};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, {.timeout = timeout, .stdin_data = std::move(stdin_data)});
}

CommandResult PrivateContainerd::ctr_ok(const std::vector<std::string>& args,
                                        std::chrono::milliseconds timeout) const {
  CommandResult result = ctr(args, timeout);
  if (!result.ok()) {
    throw std::runtime_error(fmt::format("ctr {}: {}\ncontainerd log tail:\n{}",
                                         fmt::join(args, " "), result.describe(), log_tail()));
  }
  return result;
}

std::unique_ptr<EventsSubscriber> PrivateContainerd::subscribe_events(
    std::vector<std::string> filters) {
  const int n = ++subscriber_count_;
  // Filters are OR-ed by containerd: let the probe events below through any filter.
  if (!filters.empty()) filters.push_back("topic==\"/namespaces/update\"");
  std::vector<std::string> argv = {ctr_bin_, "--address", grpc_address_, "events"};
  argv.insert(argv.end(), filters.begin(), filters.end());
  auto subscriber =
      std::make_unique<EventsSubscriber>(argv, dir_.sub(fmt::format("events-{}.err", n)));
  // Publish probe events (namespace label updates) until this subscriber sees one:
  // from then on it is subscribed.
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  for (int attempt = 0; std::chrono::steady_clock::now() < deadline; ++attempt) {
    ctr({"namespaces", "label", ns_, fmt::format("libshim.test/sync={}-{}", n, attempt)});
    if (subscriber->wait_for_line({"/namespaces/update"}, 300ms)) return subscriber;
    if (!subscriber->running()) break;
  }
  throw std::runtime_error(fmt::format("ctr events did not subscribe; stderr: {}",
                                       read_text(dir_.sub(fmt::format("events-{}.err", n)))));
}

std::vector<std::string> PrivateContainerd::run_flags(bool with_runc_root) const {
  std::vector<std::string> flags = {"--fifo-dir", fifo_dir()};
  if (!with_runc_root) return flags;
  flags.insert(flags.end(), {"--runc-root", runc_root()});
  if (auto binary = runc_binary_under_test()) {
    flags.insert(flags.end(), {"--runc-binary", *binary});
  }
  return flags;
}

std::string PrivateContainerd::bundle_dir(std::string_view id) const {
  return fmt::format("{}/io.containerd.runtime.v2.task/{}/{}", state_dir(), ns_, id);
}

std::string PrivateContainerd::shim_address(std::string_view id) const {
  return recorded_shim_address(bundle_dir(id));
}

void PrivateContainerd::cleanup_tasks() {
  std::vector<std::string> base = {ctr_bin_, "--address", grpc_address_, "-n"};
  auto in_ns = [&base](const std::string& ns, std::vector<std::string> args) {
    std::vector<std::string> argv = base;
    argv.push_back(ns);
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, {.timeout = 30s});
  };
  for (const auto& ns : split_lines(ctr({"namespaces", "ls", "-q"}).out)) {
    for (const auto& task : split_lines(in_ns(ns, {"tasks", "ls", "-q"}).out)) {
      in_ns(ns, {"tasks", "rm", "-f", task});  // -f: SIGKILL, wait, delete
    }
    for (const auto& container : split_lines(in_ns(ns, {"containers", "ls", "-q"}).out)) {
      in_ns(ns, {"containers", "rm", container});
    }
  }
}

// Shims (and stuck ctr processes) that name our socket, plus anything left in our
// namespace's cgroups. Then the Go shim sockets our bundles point at, and the 2.x Go
// shim's debug sockets (a killed shim removes neither).
void PrivateContainerd::kill_strays() {
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit) || pid == self) continue;
    if (has_flag_value(process_argv(pid), grpc_address_)) ::kill(std::stoi(pid), SIGKILL);
  }
  const std::string task_root = fmt::format("{}/io.containerd.runtime.v2.task", state_dir());
  std::error_code ec;
  if (!fs::exists(task_root, ec)) return;
  for (const auto& ns_dir : fs::directory_iterator(task_root, ec)) {
    for (const auto& bundle : fs::directory_iterator(ns_dir.path(), ec)) {
      std::string address = recorded_shim_address(bundle.path());
      const std::string prefix = fmt::format("unix://{}/", kGoShimSocketDir);
      if (address.rfind(prefix, 0) == 0) ::unlink(address.substr(7).c_str());
      const std::string ns = ns_dir.path().filename().string();
      const std::string id = bundle.path().filename().string();
      ::unlink(go_shim_debug_socket_path(grpc_address_, ns, id).c_str());
    }
  }
}

void PrivateContainerd::remove_cgroups() {
  std::vector<fs::path> roots;
  std::error_code ec;
  for (const auto& controller : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    roots.push_back(controller.path() / ns_);  // v1 controllers and hybrid "unified"
  }
  roots.push_back(fs::path("/sys/fs/cgroup") / ns_);  // pure v2
  for (const auto& root : roots) {
    if (!fs::is_directory(root, ec)) continue;
    std::vector<fs::path> dirs = {root};
    for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
      if (entry.is_directory(ec)) dirs.push_back(entry.path());
    }
    // Only a fixture-generated namespace is surely ours: kill what is left in it.
    if (options_.ns.empty()) {
      for (const auto& dir : dirs) {
        for (const auto& pid : split_lines(read_text((dir / "cgroup.procs").string()))) {
          ::kill(std::stoi(pid), SIGKILL);
        }
      }
    }
    std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
      return a.string().size() > b.string().size();
    });
    for (int attempt = 0; attempt < 20; ++attempt) {
      bool all_gone = true;
      for (const auto& dir : dirs) {
        if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) all_gone = false;
      }
      if (all_gone) break;
      std::this_thread::sleep_for(50ms);
    }
  }
}

void PrivateContainerd::unmount_all() {
  std::vector<std::string> targets;
  std::istringstream mountinfo(read_text("/proc/self/mountinfo"));
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point;
    fields >> id >> parent >> devno >> root >> mount_point;
    std::string path = unescape_mount_path(mount_point);
    if (path == dir() || path.rfind(dir() + "/", 0) == 0) targets.push_back(path);
  }
  std::sort(targets.begin(), targets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& target : targets) ::umount2(target.c_str(), MNT_DETACH);
}

std::vector<SanitizerReport> PrivateContainerd::take_sanitizer_reports() {
  if (sanitizer_dir_.empty()) return {};
  return read_sanitizer_reports(sanitizer_dir_, /*remove=*/true);
}

// FAIL_CHECK, not an exception: this runs in the destructor, and the case's other
// results still count.
void PrivateContainerd::fail_on_sanitizer_reports() {
  if (sanitizer_dir_.empty()) return;
  std::string failure = sanitizer_failure(sanitizer_dir_, log_path());
  if (!failure.empty()) FAIL_CHECK("a sanitized shim reported errors:\n" << failure);
}

std::string PrivateContainerd::log_tail(std::size_t lines) const {
  std::vector<std::string> all = split_lines(read_text(log_path()));
  std::size_t first = all.size() > lines ? all.size() - lines : 0;
  return fmt::format("{}",
                     fmt::join(all.begin() + static_cast<std::ptrdiff_t>(first), all.end(), "\n"));
}

}  // namespace shim::test
