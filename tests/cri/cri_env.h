// The CRI test environment: containerd with its CRI plugin in a private temp dir
// (support/containerd_fixture.h with ContainerdOptions::cri), a private CNI bridge, the
// locally built images imported, and the runtime handlers: ours and the Go shim's (CRI's
// pause container, `sandboxer = "podsandbox"`), and on containerd 2.x ours again with
// `sandboxer = "shim"`: pods without a pause container (the shim serves the sandbox API).
//
// containerd 1.7 and 2.x honour a handler's runtime_path: one daemon serves both
// handlers. containerd 1.6 shows runtime_path in its CRI info but starts the first
// `containerd-shim-runc-v2` on its PATH, so there ours is selected through PATH and the
// Go shim runs under a second daemon (CriEnv hides the difference).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "cri_client.h"
#include "cri_images.h"
#include "support/containerd_fixture.h"

namespace shim::test::cri {

// ours and go: the podsandbox handlers; ours_shim_mode: our shim as the pod's sandboxer.
enum class Side { ours, go, ours_shim_mode };
inline constexpr std::array<Side, 2> kBothSides = {Side::ours, Side::go};
const char* side_name(Side side);  // "ours", "go", "sbx"

// Our shim-runc binary (build tree) and the Go shim that comes with `containerd_bin`.
std::string our_shim_binary();
std::string go_shim_binary(const std::string& containerd_bin);

struct HandlerSpec {
  std::string name;
  std::string runtime_path;  // empty: containerd's PATH lookup
  std::string sandboxer;     // 2.x: "shim" for a shim-mode handler; empty: podsandbox
  // Any other type gets no runc options table (CRI would decode it as runtimeoptions).
  std::string runtime_type = "io.containerd.runc.v2";
};

class CriDaemon {
 public:
  // Starts containerd with `handlers` (the first is the default), `path_prepend` in front
  // of its PATH, imports the images and waits until CRI reports ready.
  CriDaemon(std::vector<HandlerSpec> handlers, std::vector<std::string> path_prepend,
            const ImageTarballs& images);
  // Stops and removes every pod, then the fixture cleans up; the bridge goes last.
  ~CriDaemon();
  CriDaemon(const CriDaemon&) = delete;
  CriDaemon& operator=(const CriDaemon&) = delete;

  PrivateContainerd& fx() { return *fx_; }
  const PrivateContainerd& fx() const { return *fx_; }
  CriClient& client() { return *client_; }
  // cgroupfs parent of every pod: "/<fixture namespace>", removed by the fixture.
  std::string cgroup_parent() const { return "/" + fx_->ns(); }
  // The pods' CNI bridge (made at the first pod; it has no address) and its subnet
  // ("10.x.y.0/24").
  const std::string& bridge() const { return bridge_; }
  const std::string& subnet() const { return subnet_; }
  std::string log_root() const { return fx_->dir() + "/pod-logs"; }
  // runc's --root for every handler here (the handlers' options.Root).
  std::string runc_root() const { return fx_->runc_root(); }
  // <state>/io.containerd.runtime.v2.task/k8s.io/<id>, or for a shim-mode sandbox
  // <state>/io.containerd.sandbox.controller.v1.shim/k8s.io/<id> when that one exists.
  std::string bundle_dir(const std::string& id) const;
  // Where CRI looks for a pod's hostname, hosts and resolv.conf (<root>/...cri/sandboxes/
  // <id>) and its /dev/shm (<state>/...cri/sandboxes/<id>/shm).
  std::string cri_sandbox_root(const std::string& id) const;
  std::string cri_sandbox_state(const std::string& id) const;
  // The shim address of task `id` ("unix:///run/containerd/s/..."), read from its bundle
  // (`address`, or bootstrap.json on 2.x); empty when there is none.
  std::string shim_address(const std::string& id) const;
  // containerd stopped and started again on the same state; shims keep running.
  void restart();
  // Lines of containerd's log that contain `needle`.
  std::vector<std::string> log_lines_with(const std::string& needle) const;
  void remove_all_pods();

 private:
  std::string config_toml(const std::vector<HandlerSpec>& handlers) const;
  void write_cni_config() const;

  std::unique_ptr<PrivateContainerd> fx_;
  std::unique_ptr<CriClient> client_;
  std::string bridge_;
  std::string subnet_;
};

// Both handlers, on one daemon (1.7+) or two (1.6); on 2.x also our shim-mode handler.
class CriEnv {
 public:
  CriEnv();
  // The sides this containerd runs: ours and go, then ours_shim_mode on 2.x.
  const std::vector<Side>& sides() const { return sides_; }
  bool has_shim_mode() const { return sides_.size() == 3; }
  CriDaemon& daemon(Side side);
  CriClient& client(Side side) { return daemon(side).client(); }
  const std::string& handler(Side side) const;
  const ContainerdVersion& version() const { return version_; }
  bool shared_daemon() const { return daemons_.size() == 1; }
  const std::string& work_dir() const { return work_.path(); }
  // Restarts every daemon (one or two).
  void restart_all();

 private:
  TempDir work_;
  ContainerdVersion version_;
  std::vector<std::unique_ptr<CriDaemon>> daemons_;
  std::array<std::string, 3> handlers_;
  std::vector<Side> sides_;
};

}  // namespace shim::test::cri

// First statement of a CRI TEST_CASE: skips it where containerd (the version under test)
// or grpc/CNI pieces are missing.
#define LIBSHIM_SKIP_WITHOUT_CRI()                                         \
  do {                                                                     \
    LIBSHIM_SKIP_WITHOUT_CONTAINERD();                                     \
    if (auto libshim_cri_missing = ::shim::test::cri::cri_unavailable()) { \
      LIBSHIM_SKIP(*libshim_cri_missing);                                  \
    }                                                                      \
  } while (false)

namespace shim::test::cri {
// Why CRI tests cannot run here (no CNI bridge plugin, no busybox-static, no shim-runc
// build), or nullopt.
std::optional<std::string> cri_unavailable();
}  // namespace shim::test::cri
