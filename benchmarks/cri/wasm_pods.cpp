// The Wasm runtime class under CRI beside shim-runc (benchmarks/wasm_cri.py runs it): one
// private containerd with two RuntimeClass handlers, `wasm` (containerd-shim-wasm-v1) and
// `runc` (our containerd-shim-runc-v2), on the CRI test environment (tests/cri). Prints
// one JSON object:
//   start_ms  per pod, pods started alternately (each class first in turn):
//             RunPodSandbox + CreateContainer + StartContainer of one container, a
//             sleeping module (sleep.wasm) or busybox `sleep`
//   dense     one pod per class with `containers` such containers in its one shim: the
//             time to start them all, the shim's PSS/RSS/threads and the PSS of every
//             other process under the shim (the containers' and the pause container's)
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct Options {
  int pods = 20;
  int containers = 100;
};

enum class Class { wasm, runc };
const char* class_name(Class c) { return c == Class::wasm ? "wasm" : "runc"; }

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

long status_field(pid_t pid, const std::string& field) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

v1::ContainerConfig container_of(Class c, const std::string& name) {
  if (c == Class::runc) return container_config(name, {"sleep", "1000000"});
  v1::ContainerConfig config = container_config(name, {"/sleep.wasm"});
  config.mutable_image()->set_image(kWasmImage);
  return config;
}

Pod start_pod(CriDaemon& daemon, Class c, const std::string& name) {
  Pod pod;
  pod.config = pod_config(daemon, unique_name(name, Side::ours));
  fs::create_directories(pod.config.log_directory());
  pod.id = daemon.client().run_pod(pod.config, class_name(c));
  return pod;
}

// The shim serving `pod` (one per pod under the podsandbox controller).
ShimProcess shim_of(CriDaemon& daemon, const Pod& pod) {
  for (auto& shim : shim_processes(daemon.fx().grpc_address())) {
    if (shim.id == pod.id) return shim;
  }
  throw std::runtime_error("no shim serves pod " + pod.id);
}

json::object dense_pod(CriDaemon& daemon, Class c, int containers) {
  const auto start = Clock::now();
  Pod pod = start_pod(daemon, c, fmt::format("dense-{}", class_name(c)));
  for (int i = 0; i < containers; ++i) {
    run_container(daemon.client(), pod, container_of(c, fmt::format("c{}", i)));
  }
  const double start_all_ms = ms_since(start);
  sleep(3);  // start-up garbage settles
  const ShimProcess shim = shim_of(daemon, pod);
  long others_pss = 0;
  long others = 0;
  for (pid_t pid : process_tree(shim.pid)) {
    if (pid == shim.pid) continue;
    others_pss += pss_kib(pid);
    ++others;
  }
  json::object out = {{"containers", containers},
                      {"start_all_ms", start_all_ms},
                      {"shim_pss_kib", pss_kib(shim.pid)},
                      {"shim_rss_kib", status_field(shim.pid, "VmRSS")},
                      {"shim_threads", status_field(shim.pid, "Threads")},
                      {"other_processes", others},
                      {"other_pss_kib", others_pss}};
  remove_pod(daemon.client(), pod);
  return out;
}

json::object run(const Options& options) {
  TempDir work("lswasmcri-");
  ImageTarballs images = build_image_tarballs(work.sub("images"));
  images.wasm = build_wasm_image_tarball(work.sub("images"));
  const std::string wasm_shim = fs::canonical(LIBSHIM_CRI_WASM_SHIM).string();
  const std::string runc_shim = fs::canonical(our_shim_binary()).string();
  // containerd 1.6 ignores runtime_path: both shims are found on PATH by runtime type.
  CriDaemon daemon(
      {{"wasm", wasm_shim, "", "io.containerd.wasm.v1"}, {"runc", runc_shim}},
      {fs::path(wasm_shim).parent_path().string(), fs::path(runc_shim).parent_path().string()},
      images);
  json::object start_ms = {{"wasm", json::array()}, {"runc", json::array()}};
  std::vector<Pod> pods;
  for (int i = 0; i < options.pods; ++i) {
    for (Class c : (i % 2 == 0) ? std::array{Class::wasm, Class::runc}
                                : std::array{Class::runc, Class::wasm}) {
      const auto start = Clock::now();
      Pod pod = start_pod(daemon, c, fmt::format("start-{}", class_name(c)));
      run_container(daemon.client(), pod, container_of(c, "app"));
      start_ms[class_name(c)].as_array().push_back(ms_since(start));
      pods.push_back(std::move(pod));
    }
  }
  for (const Pod& pod : pods) remove_pod(daemon.client(), pod);
  json::object dense;
  for (Class c : {Class::wasm, Class::runc}) {
    dense[class_name(c)] = dense_pod(daemon, c, options.containers);
  }
  return {{"pods", options.pods},
          {"containerd", daemon.fx().version().text},
          {"start_ms", start_ms},
          {"dense", dense}};
}

}  // namespace
}  // namespace shim::test::cri

int main(int argc, char** argv) {
  shim::test::cri::Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--pods") {
      options.pods = std::atoi(argv[i + 1]);
    } else if (flag == "--containers") {
      options.containers = std::atoi(argv[i + 1]);
    } else {
      std::cerr << "usage: cri_wasm_bench [--pods N] [--containers M]\n";
      return 64;
    }
  }
  try {
    if (auto missing = shim::test::cri::cri_unavailable()) {
      std::cerr << "cri_wasm_bench: " << *missing << "\n";
      return 2;
    }
    std::cout << boost::json::serialize(shim::test::cri::run(options)) << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "cri_wasm_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
