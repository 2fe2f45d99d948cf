#include "support/runc_e2e.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "support/busybox_rootfs.h"
#include "support/ttrpc_harness.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string read_link(const std::string& path) {
  char buffer[4096];
  ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
}

ContainerdOptions options_for(ShimUnderTest shim) {
  ContainerdOptions options;
  if (shim == ShimUnderTest::kOurs) options.path_prepend = {our_runc_shim_dir()};
  return options;
}

// The `ctr task ls` row of `id`: {pid, status}, or nullopt.
std::optional<std::pair<std::string, std::string>> task_row(const PrivateContainerd& fx,
                                                            const std::string& id) {
  CommandResult ls = fx.ctr({"task", "ls"});
  std::istringstream lines(ls.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, pid, status;
    words >> name >> pid >> status;
    if (name == id) return std::make_pair(pid, status);
  }
  return std::nullopt;
}

bool is_zombie(pid_t pid) {
  std::string stat = read_all(fmt::format("/proc/{}/stat", pid));
  auto close = stat.rfind(')');
  return close == std::string::npos || stat.size() <= close + 2 || stat[close + 2] == 'Z';
}

}  // namespace

const std::string& our_runc_shim_dir() {
  static const std::string dir = shim_build_dir() + "/shim-runc";
  return dir;
}

const std::string& our_runc_shim() {
  static const std::string path = our_runc_shim_dir() + "/containerd-shim-runc-v2";
  return path;
}

RuncE2e::RuncE2e(ShimUnderTest shim) : fx(options_for(shim)), rootfs(fx.dir() + "/rootfs") {
  make_busybox_rootfs(rootfs);
}

std::vector<std::string> RuncE2e::run(const std::vector<std::string>& flags, const std::string& id,
                                      const std::vector<std::string>& cmd) const {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), flags.begin(), flags.end());
  for (const auto& flag : fx.run_flags()) args.push_back(flag);
  args.insert(args.end(), {"--rootfs", rootfs, id});
  args.insert(args.end(), cmd.begin(), cmd.end());
  return args;
}

std::string task_status(const PrivateContainerd& fx, const std::string& id) {
  auto row = task_row(fx, id);
  return row ? row->second : "";
}

bool wait_task_status(const PrivateContainerd& fx, const std::string& id, const std::string& status,
                      std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (task_status(fx, id) == status) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::string RuncE2e::task_status(const std::string& id) const {
  return shim::test::task_status(fx, id);
}

pid_t RuncE2e::task_pid(const std::string& id) const {
  auto row = task_row(fx, id);
  return row ? static_cast<pid_t>(std::atoi(row->first.c_str())) : 0;
}

bool RuncE2e::wait_status(const std::string& id, const std::string& status,
                          std::chrono::milliseconds timeout) const {
  return wait_task_status(fx, id, status, timeout);
}

std::vector<pid_t> live_shims(const std::string& binary, const std::string& ns) {
  std::vector<pid_t> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = ::readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    std::string base = fmt::format("/proc/{}", pid);
    if (read_link(base + "/exe") != binary) continue;
    std::string cmdline = read_all(base + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("-namespace " + ns + " ") == std::string::npos) continue;
    if (is_zombie(pid)) continue;
    pids.push_back(pid);
  }
  ::closedir(proc);
  std::sort(pids.begin(), pids.end());
  return pids;
}

bool wait_no_live_shims(const std::string& binary, const std::string& ns,
                        std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!live_shims(binary, ns).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

std::vector<std::string> event_topics_for(const EventsSubscriber& events, const std::string& id) {
  std::vector<std::string> topics;
  for (const auto& line : events.lines()) {
    if (line.find("\"container_id\":\"" + id + "\"") == std::string::npos) continue;
    auto start = line.find(" /tasks/");
    if (start == std::string::npos) continue;
    auto end = line.find(' ', start + 1);
    topics.push_back(line.substr(start + 1, end - start - 1));
  }
  return topics;
}

std::string unix_path_of(const std::string& address) {
  constexpr std::string_view kScheme = "unix://";
  return address.rfind(kScheme, 0) == 0 ? address.substr(kScheme.size()) : "";
}

const char* task_service_for(const ContainerdVersion& version) {
  return version.major >= 2 ? kTaskServiceV3 : kTaskServiceV2;
}

TaskCallResult call_task_api(const std::string& address, const std::string& ns,
                             const std::string& method, const std::string& payload,
                             std::chrono::milliseconds timeout, const std::string& service) {
  SyncClient client(address);
  ttrpc::CallOptions options;
  options.timeout = timeout;
  options.metadata = {{"containerd-namespace-ttrpc", ns}};
  CallResult result = client.call(service, method, payload, options, timeout + 1s);
  return TaskCallResult{std::move(result.status), std::move(result.payload)};
}

std::optional<containerd::task::v2::ConnectResponse> connect_task(const std::string& address,
                                                                  const std::string& ns,
                                                                  const std::string& id) {
  containerd::task::v2::ConnectRequest request;
  request.set_id(id);
  TaskCallResult result = call_task_api(address, ns, "Connect", request.SerializeAsString());
  containerd::task::v2::ConnectResponse response;
  if (!result.status.ok() || !response.ParseFromString(result.payload)) return std::nullopt;
  return response;
}

}  // namespace shim::test
