#include "cri_pod.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace shim::test::cri {
namespace {

using namespace std::chrono_literals;

// kubelet's default is a PID namespace per container; shareProcessNamespace makes it the
// pod's (the pause process is PID 1 and the shim kills the rest when an init exits).
void set_pid_mode(v1::NamespaceOption* options, bool share_pid) {
  options->set_pid(share_pid ? v1::POD : v1::CONTAINER);
}

}  // namespace

std::string unique_name(const std::string& prefix, Side side) {
  static std::atomic<int> counter{0};
  return fmt::format("{}-{}-{}-{}", prefix, side_name(side), ++counter, ::getpid());
}

v1::PodSandboxConfig pod_config(const CriDaemon& daemon, const std::string& name, bool share_pid) {
  v1::PodSandboxConfig config;
  auto* metadata = config.mutable_metadata();
  metadata->set_name(name);
  metadata->set_uid("uid-" + name);
  metadata->set_namespace_("libshim-test");
  metadata->set_attempt(0);
  config.set_hostname(name.substr(0, 63));
  config.set_log_directory(fmt::format("{}/{}", daemon.log_root(), name));
  auto* linux = config.mutable_linux();
  linux->set_cgroup_parent(daemon.cgroup_parent());
  set_pid_mode(linux->mutable_security_context()->mutable_namespace_options(), share_pid);
  (*config.mutable_labels())["libshim.test/pod"] = name;
  return config;
}

v1::ContainerConfig container_config(const std::string& name,
                                     const std::vector<std::string>& command, bool share_pid) {
  v1::ContainerConfig config;
  config.mutable_metadata()->set_name(name);
  config.mutable_image()->set_image(kBusyboxImage);
  for (const auto& arg : command) config.add_command(arg);
  config.set_log_path(name + ".log");
  set_pid_mode(config.mutable_linux()->mutable_security_context()->mutable_namespace_options(),
               share_pid);
  return config;
}

Pod run_pod(CriEnv& env, Side side, const std::string& prefix, bool share_pid) {
  Pod pod;
  pod.config = pod_config(env.daemon(side), unique_name(prefix, side), share_pid);
  std::filesystem::create_directories(pod.config.log_directory());
  pod.id = env.client(side).run_pod(pod.config, env.handler(side));
  return pod;
}

std::string run_container(CriClient& client, const Pod& pod, const v1::ContainerConfig& config) {
  std::string id = client.create_container(pod.id, config, pod.config);
  client.start_container(id);
  return id;
}

void remove_pod(CriClient& client, const Pod& pod) {
  client.stop_pod(pod.id);
  client.remove_pod(pod.id);
}

v1::ContainerStatus wait_status(CriClient& client, const std::string& id,
                                const std::function<bool(const v1::ContainerStatus&)>& predicate,
                                const std::string& what, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    v1::ContainerStatus status = client.container_status(id).status();
    if (predicate(status)) return status;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(fmt::format("container {}: not {} within {} ms; last status: {}", id,
                                           what, timeout.count(), status.ShortDebugString()));
    }
    std::this_thread::sleep_for(50ms);
  }
}

v1::ContainerStatus wait_exited(CriClient& client, const std::string& id,
                                std::chrono::milliseconds timeout) {
  return wait_status(
      client, id, [](const v1::ContainerStatus& s) { return s.state() == v1::CONTAINER_EXITED; },
      "exited", timeout);
}

std::string log_path(const Pod& pod, const v1::ContainerConfig& config) {
  return fmt::format("{}/{}", pod.config.log_directory(), config.log_path());
}

std::vector<CriLogEntry> parse_cri_log(const std::string& text) {
  std::vector<CriLogEntry> entries;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) {
      throw std::runtime_error(fmt::format("CRI log: no newline after offset {}", pos));
    }
    const std::string line = text.substr(pos, end - pos);
    const std::size_t s1 = line.find(' ');
    const std::size_t s2 = s1 == std::string::npos ? s1 : line.find(' ', s1 + 1);
    // containerd always writes the space after the tag, also before empty content.
    if (s2 == std::string::npos || line.size() < s2 + 3 ||
        (line[s2 + 1] != 'P' && line[s2 + 1] != 'F') || line[s2 + 2] != ' ') {
      throw std::runtime_error(
          fmt::format("CRI log: malformed line at offset {}: {:.120}", pos, line));
    }
    CriLogEntry entry;
    entry.time = line.substr(0, s1);
    entry.stream = line.substr(s1 + 1, s2 - s1 - 1);
    entry.tag = line[s2 + 1];
    entry.content = line.substr(s2 + 3);
    entries.push_back(std::move(entry));
    pos = end + 1;
  }
  return entries;
}

std::string cri_log_payload(const std::vector<CriLogEntry>& entries, const std::string& stream) {
  std::string out;
  for (const auto& entry : entries) {
    if (entry.stream != stream) continue;
    out += entry.content;
    if (entry.tag == 'F') out += '\n';
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void wait_log_contains(const std::string& path, const std::string& needle,
                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const std::string text = read_file(path);
    if (text.find(needle) != std::string::npos) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(fmt::format("log {}: no \"{}\" within {} ms; it has: {:.400}", path,
                                           needle, timeout.count(), text));
    }
    std::this_thread::sleep_for(50ms);
  }
}

void set_memory_limit(v1::ContainerConfig& config, long bytes) {
  auto* resources = config.mutable_linux()->mutable_resources();
  resources->set_memory_limit_in_bytes(bytes);
  resources->set_memory_swap_limit_in_bytes(bytes);
}

}  // namespace shim::test::cri
