// The Wasm runtime class under CRI (containerd 1.6, 1.7, 2.1): a RuntimeClass handler
// `wasm` (runtime_type io.containerd.wasm.v1) whose pods run their pause container through
// runc and their Wasm containers in WasmEdge, all in one containerd-shim-wasm-v1 per pod:
// the container's exit code and CRI log, ExecSync of a module and of a native binary.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"
#include "support/wait_until.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Why the Wasm class cannot run here (no engine where the shim looks, no modules, no
// shim), or nullopt. The engine check mirrors shim-wasm/src/engine.h: the env override,
// else the build's root.
std::optional<std::string> wasm_unavailable() {
  const char* env = std::getenv("LIBSHIM_WASMEDGE_ROOT");
  std::string root = env && *env ? env : LIBSHIM_CRI_WASMEDGE_ROOT;
  if (!fs::exists(root + "/usr/bin/wasmedge") && !fs::exists("/usr/bin/wasmedge")) {
    return "no WasmEdge engine (cmake/fetch-wasmedge.sh) at " + root;
  }
  if (!fs::exists(std::string(LIBSHIM_CRI_WASM_MODULE_DIR) + "/hello.wasm")) {
    return std::string("no WASI modules in ") + LIBSHIM_CRI_WASM_MODULE_DIR;
  }
  if (!fs::exists(LIBSHIM_CRI_WASM_SHIM)) return std::string(LIBSHIM_CRI_WASM_SHIM) + " not built";
  return std::nullopt;
}

v1::ContainerConfig wasm_container(const std::string& name, const std::vector<std::string>& args) {
  v1::ContainerConfig config = container_config(name, args);
  config.mutable_image()->set_image(kWasmImage);
  return config;
}

}  // namespace

TEST_CASE("CRI: a Wasm pod: pause container through runc, modules in the engine",
          "[cri][multi-version][wasm]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  if (auto why = wasm_unavailable()) LIBSHIM_SKIP(*why);
  TempDir work("lscri-");
  ImageTarballs images = build_image_tarballs(work.sub("images"));
  images.wasm = build_wasm_image_tarball(work.sub("images"));
  // 1.6 ignores runtime_path: containerd-shim-wasm-v1 is found on PATH (runtime_type).
  const std::string shim = fs::canonical(LIBSHIM_CRI_WASM_SHIM).string();
  CriDaemon daemon({{"wasm", shim, "", "io.containerd.wasm.v1"}},
                   {fs::path(shim).parent_path().string()}, images);
  CriClient& client = daemon.client();

  Pod pod;
  pod.config = pod_config(daemon, unique_name("wasm", Side::ours));
  fs::create_directories(pod.config.log_directory());
  pod.id = client.run_pod(pod.config, "wasm");
  std::vector<ShimProcess> shims = shim_processes(daemon.fx().grpc_address());
  REQUIRE(shims.size() == 1);
  CHECK(fs::weakly_canonical(shims[0].exe) == fs::weakly_canonical(shim));

  // A module that exits: its code and its log.
  v1::ContainerConfig hello = wasm_container("hello", {"/hello.wasm", "3", "two words"});
  auto* env = hello.add_envs();
  env->set_key("GREETING");
  env->set_value("from CRI");
  std::string hello_id = run_container(client, pod, hello);
  v1::ContainerStatus exited = wait_exited(client, hello_id);
  CHECK(exited.exit_code() == 3);
  wait_log_contains(log_path(pod, hello), "to stderr");
  std::vector<CriLogEntry> log = parse_cri_log(read_file(log_path(pod, hello)));
  CHECK(cri_log_payload(log, "stdout") ==
        "hello from wasm\nargv[0]=hello.wasm\nargv[1]=3\nargv[2]=two words\nGREETING=from CRI\n");
  CHECK(cri_log_payload(log, "stderr") == "to stderr\n");

  // A running module: ExecSync of a module and of a native binary in its namespaces.
  v1::ContainerConfig spin = wasm_container("spin", {"/spin.wasm"});
  std::string spin_id = run_container(client, pod, spin);
  wait_log_contains(log_path(pod, spin), "spinning");
  v1::ExecSyncResponse module_exec = client.exec_sync(spin_id, {"/hello.wasm", "5"}, 30);
  CHECK(module_exec.exit_code() == 5);
  CHECK(module_exec.stdout().rfind("hello from wasm\nargv[0]=hello.wasm\nargv[1]=5\n", 0) == 0);
  v1::ExecSyncResponse native_exec = client.exec_sync(spin_id, {"/bin/cat", "/etc/message"}, 30);
  CHECK(native_exec.exit_code() == 0);
  CHECK(native_exec.stdout() == "a file in the rootfs\n");

  // The pod stops (the spinning module killed) and goes; one shim served it all.
  CHECK(shim_processes(daemon.fx().grpc_address()).size() == 1);
  remove_pod(client, pod);
  CHECK(wait_until([&] { return shim_processes(daemon.fx().grpc_address()).empty(); }, 10s));
}

}  // namespace shim::test::cri
