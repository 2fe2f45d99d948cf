#include "cri_env.h"

#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "support/busybox_rootfs.h"
#include "support/criu.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kCniBinDir = "/usr/lib/cni";
constexpr const char* kGoHandler = "runc-go";
constexpr const char* kOurHandler = "libshim";
constexpr const char* kOurShimModeHandler = "libshim-sbx";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// CRI learns of an image from the image service's create event, handled apart from the
// import's own reply: a test that asks at once can be told "no such image" (2.1, seen in
// CI). Wait until CRI knows every imported image.
void wait_images_known(CriClient& client, const ImageTarballs& images,
                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<const char*> refs = {kPauseImage, kBusyboxImage};
  if (!images.wasm.empty()) refs.push_back(kWasmImage);
  for (const char* ref : refs) {
    while (!client.image_status(ref).has_image()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        throw std::runtime_error(
            fmt::format("CRI does not know image {} {} ms after its import", ref, timeout.count()));
      }
      std::this_thread::sleep_for(20ms);
    }
  }
}

// The runtime tables of one handler, in the layout of `version` (2 or 3). Every handler
// keeps runc's state in `runc_root` so a test can see what is left.
std::string runtime_toml(const std::string& prefix, const HandlerSpec& handler,
                         const std::string& runc_root) {
  std::string toml = fmt::format(
      "\n[{}.containerd.runtimes.{}]\n"
      "  runtime_type = \"{}\"\n",
      prefix, handler.name, handler.runtime_type);
  if (!handler.sandboxer.empty()) toml += fmt::format("  sandboxer = \"{}\"\n", handler.sandboxer);
  if (!handler.runtime_path.empty()) {
    toml += fmt::format("  runtime_path = \"{}\"\n", handler.runtime_path);
  }
  if (handler.runtime_type != "io.containerd.runc.v2") return toml;
  toml += fmt::format("[{}.containerd.runtimes.{}.options]\n  Root = \"{}\"\n", prefix,
                      handler.name, runc_root);
  return toml;
}

}  // namespace

const char* side_name(Side side) {
  switch (side) {
    case Side::ours:
      return "ours";
    case Side::go:
      return "go";
    case Side::ours_shim_mode:
      return "sbx";
  }
  return "?";
}

std::string our_shim_binary() { return LIBSHIM_BINARY_DIR "/shim-runc/containerd-shim-runc-v2"; }

std::string go_shim_binary(const std::string& containerd_bin) {
  return (fs::path(containerd_bin).parent_path() / "containerd-shim-runc-v2").string();
}

std::optional<std::string> cri_unavailable() {
  for (const char* plugin : {"bridge", "host-local", "loopback"}) {
    if (::access(fmt::format("{}/{}", kCniBinDir, plugin).c_str(), X_OK) != 0) {
      return fmt::format("CNI plugin {}/{} missing (containernetworking-plugins)", kCniBinDir,
                         plugin);
    }
  }
  if (!busybox_available()) return std::string("busybox-static missing");
  if (::access(our_shim_binary().c_str(), X_OK) != 0) {
    return fmt::format("{} not built", our_shim_binary());
  }
  return std::nullopt;
}

CriDaemon::CriDaemon(std::vector<HandlerSpec> handlers, std::vector<std::string> path_prepend,
                     const ImageTarballs& images) {
  ContainerdOptions options;
  options.cri = true;
  options.start = false;
  options.path_prepend = std::move(path_prepend);
  // containerd checks CRIU for CheckpointContainer and runc runs it: the cached one.
  options.path_prepend.push_back(criu_path_dir());
  options.start_timeout = 60s;
  fx_ = std::make_unique<PrivateContainerd>(options);
  const std::size_t hash = std::hash<std::string>{}(fx_->ns());
  bridge_ = fmt::format("lscri{:06x}", hash & 0xffffff);
  // A /24 no one else here uses; nothing is sent to it (no gateway, no masquerade).
  subnet_ = fmt::format("10.{}.{}.0/24", 200 + (hash >> 24) % 50, (hash >> 32) % 256);
  // The CRI tables name the fixture's own dirs, so they are appended to the config.toml
  // it wrote (not started yet) rather than passed as extra_config.
  {
    std::ofstream config(fx_->config_path(), std::ios::app);
    config << config_toml(handlers);
    if (!config) throw std::runtime_error("appending to " + fx_->config_path());
  }
  write_cni_config();
  fx_->start();
  client_ = std::make_unique<CriClient>(fx_->grpc_address());
  import_images(*fx_, images);
  client_->wait_ready(60s);
  wait_images_known(*client_, images, 30s);
}

CriDaemon::~CriDaemon() {
  try {
    if (fx_->running()) remove_all_pods();
  } catch (...) {
    // The fixture's own cleanup below still kills and removes what is left.
  }
  client_.reset();
  // $LIBSHIM_CRI_LOG_DIR: keep each daemon's log (shim lines included) for a look later.
  if (const char* keep = std::getenv("LIBSHIM_CRI_LOG_DIR"); keep != nullptr && *keep != '\0') {
    std::error_code ec;
    fs::create_directories(keep, ec);
    fs::copy_file(fx_->log_path(), fmt::format("{}/{}.log", keep, fx_->ns()),
                  fs::copy_options::overwrite_existing, ec);
  }
  fx_.reset();
  run_command({"ip", "link", "del", bridge_});
}

std::string CriDaemon::config_toml(const std::vector<HandlerSpec>& handlers) const {
  const bool v3 = fx_->version().major >= 2;
  // 2.x (config version 3) split the CRI plugin: runtime settings, image settings and the
  // gRPC/streaming server each have their own table.
  const std::string runtime =
      v3 ? "plugins.\"io.containerd.cri.v1.runtime\"" : "plugins.\"io.containerd.grpc.v1.cri\"";
  const std::string server = "plugins.\"io.containerd.grpc.v1.cri\"";
  std::string toml;
  if (v3) {
    toml += fmt::format(
        "\n[plugins.\"io.containerd.cri.v1.images\"]\n  snapshotter = \"overlayfs\"\n"
        "[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = \"{}\"\n"
        "\n[{}]\n",
        kPauseImage, server);
  } else {
    toml += fmt::format("\n[{}]\n  sandbox_image = \"{}\"\n", server, kPauseImage);
  }
  // The streaming server (unused here) listens on loopback only, on a free port.
  toml += "  stream_server_address = \"127.0.0.1\"\n  stream_server_port = \"0\"\n";
  if (v3) toml += fmt::format("\n[{}]\n  enable_cdi = false\n", runtime);
  // No CAP_SYS_RESOURCE here: runc could not set the pause container's oom_score_adj of
  // -998; restrict_oom_score_adj clamps it to ours. No AppArmor on this kernel. Network
  // namespaces go under the private state dir instead of the host's /var/run/netns.
  toml +=
      "  restrict_oom_score_adj = true\n  disable_apparmor = true\n"
      "  netns_mounts_under_state_dir = true\n";
  toml += fmt::format("\n[{}.containerd]\n  default_runtime_name = \"{}\"\n", runtime,
                      handlers.at(0).name);
  if (!v3) toml += "  snapshotter = \"overlayfs\"\n";
  for (const auto& handler : handlers) toml += runtime_toml(runtime, handler, runc_root());
  toml += fmt::format("\n[{}.cni]\n  conf_dir = \"{}/cni\"\n", runtime, fx_->dir());
  toml += v3 ? fmt::format("  bin_dirs = [\"{}\"]\n", kCniBinDir)
             : fmt::format("  bin_dir = \"{}\"\n", kCniBinDir);
  return toml;
}

void CriDaemon::write_cni_config() const {
  const std::string dir = fx_->dir() + "/cni";
  fs::create_directories(dir);
  // The bridge plugin alone (CRI adds loopback itself); host-local keeps its leases in
  // our dir instead of the host's /var/lib/cni/networks.
  std::ofstream out(dir + "/10-libshim.conflist");
  out << fmt::format(
      R"({{"cniVersion":"0.4.0","name":"{}","plugins":[{{"type":"bridge","bridge":"{}",)"
      R"("isGateway":false,"ipMasq":false,"ipam":{{"type":"host-local",)"
      R"("ranges":[[{{"subnet":"{}"}}]],"dataDir":"{}/cni-ipam"}}}}]}})",
      fx_->ns(), bridge_, subnet_, fx_->dir());
  if (!out) throw std::runtime_error("writing the CNI config in " + dir);
}

std::string CriDaemon::bundle_dir(const std::string& id) const {
  // plugins/sandbox/controller.go: a shim-mode sandbox's bundle is under the sandbox
  // controller plugin's state dir.
  std::string sandbox = fmt::format("{}/io.containerd.sandbox.controller.v1.shim/{}/{}",
                                    fx_->state_dir(), kCriNamespace, id);
  if (fs::exists(sandbox)) return sandbox;
  return fmt::format("{}/io.containerd.runtime.v2.task/{}/{}", fx_->state_dir(), kCriNamespace, id);
}

std::string CriDaemon::cri_sandbox_root(const std::string& id) const {
  return fmt::format("{}/io.containerd.grpc.v1.cri/sandboxes/{}", fx_->root_dir(), id);
}

std::string CriDaemon::cri_sandbox_state(const std::string& id) const {
  return fmt::format("{}/io.containerd.grpc.v1.cri/sandboxes/{}", fx_->state_dir(), id);
}

std::string CriDaemon::shim_address(const std::string& id) const {
  const std::string bundle = bundle_dir(id);
  std::string address = read_text(bundle + "/address");
  if (!address.empty()) return address;
  const std::string bootstrap = read_text(bundle + "/bootstrap.json");
  if (bootstrap.empty()) return {};
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(bootstrap, ec);
  if (ec || !parsed.is_object()) return {};
  const boost::json::value* field = parsed.as_object().if_contains("address");
  return field != nullptr && field->is_string() ? std::string(field->as_string()) : "";
}

void CriDaemon::restart() {
  fx_->restart();
  client_->wait_ready(60s);
}

std::vector<std::string> CriDaemon::log_lines_with(const std::string& needle) const {
  std::vector<std::string> lines;
  std::istringstream in(read_text(fx_->log_path()));
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

void CriDaemon::remove_all_pods() {
  for (const auto& pod : client_->list_pods()) {
    client_->stop_pod(pod.id());
    client_->remove_pod(pod.id());
  }
}

CriEnv::CriEnv() : work_("lscri-") {
  const ImageTarballs images = build_image_tarballs(work_.sub("images"));
  const ContainerdBinaries bins = resolve_containerd("", "");
  std::string why;
  auto version = probe_containerd(bins, &why);
  if (!version) throw std::runtime_error(fmt::format("{}: {}", kSkipMarker, why));
  version_ = *version;
  handlers_ = {kOurHandler, kGoHandler, kOurShimModeHandler};
  sides_ = {Side::ours, Side::go};
  if (version_.at_least(1, 7)) {
    std::vector<HandlerSpec> handlers = {{kOurHandler, our_shim_binary()},
                                         {kGoHandler, go_shim_binary(bins.containerd)}};
    std::vector<std::string> path_prepend;
    // 1.7's shim mode needed ENABLE_CRI_SANDBOXES and another key: 2.x only.
    if (version_.major >= 2) {
      handlers.push_back({kOurShimModeHandler, our_shim_binary(), "shim"});
      sides_.push_back(Side::ours_shim_mode);
      // A shim-mode sandbox's shim is found from runtime_type alone (CRI hands the sandbox
      // controller no runtime_path: internal/cri/server/sandbox_run.go), so ours must be
      // the containerd-shim-runc-v2 on containerd's PATH; the other handlers' tasks and
      // pause containers run the runtime_path they name (the smoke test checks it).
      path_prepend.push_back(fs::path(our_shim_binary()).parent_path().string());
    }
    daemons_.push_back(
        std::make_unique<CriDaemon>(std::move(handlers), std::move(path_prepend), images));
    return;
  }
  // 1.6: runtime_path is ignored; PATH picks the shim, so one daemon per shim.
  const std::string our_dir = fs::path(our_shim_binary()).parent_path().string();
  daemons_.push_back(std::make_unique<CriDaemon>(std::vector<HandlerSpec>{{kOurHandler, ""}},
                                                 std::vector<std::string>{our_dir}, images));
  daemons_.push_back(std::make_unique<CriDaemon>(std::vector<HandlerSpec>{{kGoHandler, ""}},
                                                 std::vector<std::string>{}, images));
}

CriDaemon& CriEnv::daemon(Side side) {
  return side == Side::go && daemons_.size() == 2 ? *daemons_[1] : *daemons_[0];
}

const std::string& CriEnv::handler(Side side) const {
  return handlers_[static_cast<std::size_t>(side)];
}

void CriEnv::restart_all() {
  for (auto& daemon : daemons_) daemon->restart();
}

}  // namespace shim::test::cri
