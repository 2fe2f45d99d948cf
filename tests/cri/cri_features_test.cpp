// What containerd 2.x learns about a runtime handler from `<shim> -info` and passes on to
// Kubernetes: the CRI Status runtime handler features, and whether a recursive read-only
// mount (Kubernetes' recursiveReadOnly: Enabled) is accepted. Ours must equal the Go
// shim's, whose answer carries runc's features (mount option "rro").
#include <optional>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_pod.h"

namespace shim::test::cri {
namespace {

std::optional<v1::RuntimeHandlerFeatures> handler_features(CriEnv& env, Side side) {
  v1::StatusResponse status = env.client(side).status(true);
  for (const auto& handler : status.runtime_handlers()) {
    if (handler.name() == env.handler(side)) return handler.features();
  }
  return std::nullopt;
}

// CreateContainer with a recursive read-only mount of the work dir: "ok" or the error.
std::string create_with_rro_mount(CriEnv& env, Side side) {
  CriClient& client = env.client(side);
  Pod pod = run_pod(env, side, "rro");
  v1::ContainerConfig config = container_config("rro", {"sleep", "3600"});
  v1::Mount* mount = config.add_mounts();
  mount->set_container_path("/rro");
  mount->set_host_path(env.work_dir());
  mount->set_readonly(true);
  mount->set_recursive_read_only(true);
  std::string outcome = "ok";
  try {
    const std::string id = run_container(client, pod, config);
    v1::ExecSyncResponse touch = client.exec_sync(id, {"/bin/sh", "-c", "touch /rro/x"}, 10);
    outcome = fmt::format("ok, write exit code {}", touch.exit_code());
  } catch (const CriError& e) {
    outcome = fmt::format("refused: {}", e.status_message());
  }
  try {
    remove_pod(client, pod);
  } catch (const std::exception& e) {
    FAIL(fmt::format("{} (after \"{}\"); containerd log tail:\n{}", e.what(), outcome,
                     env.daemon(side).fx().log_tail(40)));
  }
  return outcome;
}

}  // namespace

TEST_CASE("CRI runtime handler features: ours equal the Go shim's", "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  CriEnv env;
  const std::optional<v1::RuntimeHandlerFeatures> ours = handler_features(env, Side::ours);
  const std::optional<v1::RuntimeHandlerFeatures> go = handler_features(env, Side::go);
  INFO("ours: " << (ours ? ours->ShortDebugString() : "not listed")
                << "; go: " << (go ? go->ShortDebugString() : "not listed"));
  REQUIRE(ours.has_value() == go.has_value());
  if (env.version().major >= 2) {
    // 2.x lists every handler; the Go shim's -info carries runc's "rro" mount option.
    REQUIRE(go.has_value());
    CHECK(go->recursive_read_only_mounts());
  }
  if (go) {
    CHECK(ours->recursive_read_only_mounts() == go->recursive_read_only_mounts());
    CHECK(ours->user_namespaces() == go->user_namespaces());
  }
}

TEST_CASE("CRI recursive read-only mount: accepted as with the Go shim", "[cri][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  std::string why;
  auto version = probe_containerd(resolve_containerd("", ""), &why);
  if (version && version->major < 2) {
    LIBSHIM_SKIP("containerd before 2.0 has no recursive read-only mounts in CRI");
  }
  CriEnv env;
  // The Go side first: with ours, containerd 2.1.9 dereferences the missing features and
  // crashes (see docs/kubernetes.md).
  const std::string go = create_with_rro_mount(env, Side::go);
  WARN("go: " << go);
  const std::string ours = create_with_rro_mount(env, Side::ours);
  INFO("go: " << go << "; ours: " << ours);
  CHECK(go == "ok, write exit code 1");
  CHECK(ours == go);
}

}  // namespace shim::test::cri
