// The CRI environment itself: the daemon answers runtime.v1, both images are known to
// CRI, the handlers are listed, and each handler really runs the shim it names.
#include <filesystem>

#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_host.h"
#include "cri_pod.h"

namespace shim::test::cri {

TEST_CASE("CRI: runtime.v1 answers, images imported, each handler runs its own shim",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  for (Side side : env.sides()) {
    INFO("side " << side_name(side));
    CriClient& client = env.client(side);
    v1::VersionResponse version = client.version();
    CHECK(version.runtime_name() == "containerd");
    CHECK(version.runtime_api_version() == "v1");
    for (const char* image : {kPauseImage, kBusyboxImage}) {
      v1::ImageStatusResponse status = client.image_status(image);
      INFO("image " << image);
      REQUIRE(status.has_image());
      CHECK(status.image().id().rfind("sha256:", 0) == 0);
    }
    Pod pod = run_pod(env, side, "smoke");
    std::vector<ShimProcess> shims = shim_processes(env.daemon(side).fx().grpc_address());
    REQUIRE(shims.size() == 1);
    CHECK(shims[0].id == pod.id);
    const std::string expected = side != Side::go
                                     ? our_shim_binary()
                                     : go_shim_binary(env.daemon(side).fx().containerd_bin());
    CHECK(std::filesystem::weakly_canonical(shims[0].exe) ==
          std::filesystem::weakly_canonical(expected));
    remove_pod(client, pod);
  }
}

// Why CriEnv runs two daemons under 1.6: a handler's runtime_path shows in the CRI
// config but 1.6 starts the containerd-shim-runc-v2 on its PATH; 1.7+ run runtime_path.
TEST_CASE("CRI: which shim a handler's runtime_path starts (1.6 ignores it)",
          "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  TempDir work("lscri-");
  const ImageTarballs images = build_image_tarballs(work.sub("images"));
  CriDaemon daemon({{"probe", our_shim_binary()}}, {}, images);
  v1::StatusResponse status = daemon.client().status(true);
  const std::string config = status.info().count("config") ? status.info().at("config") : "";
  CHECK(config.find(our_shim_binary()) != std::string::npos);  // shown in the CRI info
  Pod pod;
  pod.config = pod_config(daemon, unique_name("path", Side::ours));
  std::filesystem::create_directories(pod.config.log_directory());
  pod.id = daemon.client().run_pod(pod.config, "probe");
  std::vector<ShimProcess> shims = shim_processes(daemon.fx().grpc_address());
  REQUIRE(shims.size() == 1);
  const std::string expected = daemon.fx().version().at_least(1, 7)
                                   ? our_shim_binary()
                                   : go_shim_binary(daemon.fx().containerd_bin());
  CHECK(std::filesystem::weakly_canonical(shims[0].exe) ==
        std::filesystem::weakly_canonical(expected));
  remove_pod(daemon.client(), pod);
}

}  // namespace shim::test::cri
