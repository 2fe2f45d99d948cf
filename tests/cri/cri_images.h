// The two images a CRI test needs, built here from local files (no registry is reachable):
//   pause:   /pause, a static build of images/pause.c, entrypoint /pause
//   busybox: Debian's busybox-static with applet links (support/busybox_rootfs.h) plus
//            /bin/helper (images/helper.c, static), PATH=/bin
// as OCI image layout tarballs, imported into containerd's CRI namespace `k8s.io`.
#pragma once

#include <string>

#include "support/containerd_fixture.h"

namespace shim::test::cri {

inline constexpr const char* kCriNamespace = "k8s.io";
inline constexpr const char* kPauseImage = "libshim.test/pause:3.10";
inline constexpr const char* kBusyboxImage = "libshim.test/cri-busybox:1";

inline constexpr const char* kWasmImage = "libshim.test/wasm:1";

struct ImageTarballs {
  std::string pause;
  std::string busybox;
  std::string wasm;  // build_wasm_image_tarball()'s, or empty (then not imported)
};

// Writes both tarballs under `work_dir` (created). Throws std::runtime_error naming the
// step that failed (busybox-static or the static programs missing, tar, sha256sum).
ImageTarballs build_image_tarballs(const std::string& work_dir);

// The Wasm image (kWasmImage): the busybox image's rootfs plus every module of the
// tests' WASI modules dir (tests/wasm/modules, built) at /, and /etc/message; entrypoint
// /hello.wasm. Throws as build_image_tarballs().
std::string build_wasm_image_tarball(const std::string& work_dir);

// `ctr -n k8s.io images import` of each non-empty one (throws with ctr's output on failure).
void import_images(const PrivateContainerd& fx, const ImageTarballs& tarballs);

// `ctr --address <fx> -n k8s.io args...`.
CommandResult ctr_k8s(const PrivateContainerd& fx, const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120));

}  // namespace shim::test::cri
