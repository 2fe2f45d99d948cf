// Pod and container building blocks for the CRI tests: configs as kubelet would send
// them (own PID namespace per container, pod cgroup under the daemon's private parent),
// waits with deadlines, and the CRI container log format.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cri_env.h"

namespace shim::test::cri {

// A unique name for a pod or container: "<prefix>-<side>-<counter>-<pid>" (ids stay
// unique across the sides sharing one containerd and across runs).
std::string unique_name(const std::string& prefix, Side side);

// RunPodSandbox config: metadata name/uid/namespace from `name`, log directory under
// the daemon's log root, cgroup parent the daemon's, PID namespace per container (or,
// with `share_pid`, one for the pod: shareProcessNamespace).
v1::PodSandboxConfig pod_config(const CriDaemon& daemon, const std::string& name,
                                bool share_pid = false);

// A busybox container `name` running `command` (absolute paths or PATH=/bin), log file
// "<name>.log" in the pod's log directory; `share_pid` as for the pod.
v1::ContainerConfig container_config(const std::string& name,
                                     const std::vector<std::string>& command,
                                     bool share_pid = false);

struct Pod {
  std::string id;
  v1::PodSandboxConfig config;
};

// RunPodSandbox with the side's handler.
Pod run_pod(CriEnv& env, Side side, const std::string& prefix, bool share_pid = false);
// CreateContainer + StartContainer; returns the container id.
std::string run_container(CriClient& client, const Pod& pod, const v1::ContainerConfig& config);
// StopPodSandbox + RemovePodSandbox.
void remove_pod(CriClient& client, const Pod& pod);

// Polls ContainerStatus until the container is EXITED; throws with the last state.
v1::ContainerStatus wait_exited(CriClient& client, const std::string& id,
                                std::chrono::milliseconds timeout = std::chrono::seconds(60));
// Polls until `predicate(status)` holds; throws `what` with the last status on timeout.
v1::ContainerStatus wait_status(CriClient& client, const std::string& id,
                                const std::function<bool(const v1::ContainerStatus&)>& predicate,
                                const std::string& what, std::chrono::milliseconds timeout);

// The container's log path on the host (pod log dir + container log_path).
std::string log_path(const Pod& pod, const v1::ContainerConfig& config);

// One CRI log line: "<RFC3339Nano time> <stdout|stderr> <P|F> <content>\n".
struct CriLogEntry {
  std::string time;
  std::string stream;
  char tag = 'F';
  std::string content;
};
// Parses a whole CRI log file; throws std::runtime_error at the first malformed line.
std::vector<CriLogEntry> parse_cri_log(const std::string& text);
// What the container wrote on `stream`: contents joined, "\n" after each F entry.
std::string cri_log_payload(const std::vector<CriLogEntry>& entries, const std::string& stream);
// Polls the log file until the stdout payload contains `needle`.
void wait_log_contains(const std::string& path, const std::string& needle,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30));

std::string read_file(const std::string& path);

// What one side saw, as named strings, so the two sides compare key by key.
using Observed = std::map<std::string, std::string>;
// CHECKs that `go` has the same keys and values as `ours` (INFO names the key).
// Observations whose key ends in " (s)" (durations) or " (timing)" (what depends on them)
// are not compared, as the two sides' timings differ by chance: each test bounds them per
// side (CRI_CHECK_TIMING).
void check_same_observations(const Observed& ours, const Observed& go);
// check_same_observations() of every side in `seen` that is not the Go shim's against the
// Go shim's (the shim-mode side included: what the pod's containers see is the same).
void check_same_as_go(std::map<Side, Observed>& seen);

// A timing-dependent expectation: strict for our shim (either mode); for the Go shim (the
// reference) a miss is recorded as a WARN with the expression, never a failure of our suite.
#define CRI_CHECK_TIMING(side, ...)                                             \
  do {                                                                          \
    if ((side) != ::shim::test::cri::Side::go) {                                \
      CHECK(__VA_ARGS__);                                                       \
    } else if (!(__VA_ARGS__)) {                                                \
      WARN("the Go shim missed a timing-dependent expectation: " #__VA_ARGS__); \
    }                                                                           \
  } while (false)

// A memory limit (and the same swap limit, so nothing can go to swap) for `config`.
void set_memory_limit(v1::ContainerConfig& config, long bytes);

}  // namespace shim::test::cri
