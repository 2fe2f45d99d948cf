#include "support/busybox_image.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace shim::test {
namespace {

void require(bool ok, std::string_view step) {
  if (!ok) throw std::runtime_error(fmt::format("busybox image: {} failed", step));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

std::string import_busybox_image(const PrivateContainerd& fx, const std::string& rootfs) {
  const std::string dir = fx.dir() + "/oci";
  const std::string blobs = dir + "/blobs/sha256";
  require(run_command({"mkdir", "-p", blobs}).ok(), "mkdir " + blobs);
  auto add_blob = [&](const std::string& file) {
    CommandResult sum = run_command({"sha256sum", file});
    require(sum.ok(), "sha256sum " + file);
    std::string digest = sum.out.substr(0, 64);
    std::string size = std::to_string(read_text(file).size());
    require(::rename(file.c_str(), (blobs + "/" + digest).c_str()) == 0, "moving " + file);
    return std::pair{"sha256:" + digest, size};
  };
  require(run_command({"tar", "-C", rootfs, "-cf", dir + "/layer", "."}).ok(), "tar of " + rootfs);
  auto [layer, layer_size] = add_blob(dir + "/layer");
  std::ofstream(dir + "/config") << fmt::format(
      R"({{"architecture":"amd64","os":"linux","config":{{}},"rootfs":{{"type":"layers","diff_ids":["{}"]}}}})", layer);
  auto [config, config_size] = add_blob(dir + "/config");
  std::ofstream(dir + "/manifest") << fmt::format(
      R"({{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
      R"("config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},)"
      R"("layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{}","size":{}}}]}})",
      config, config_size, layer, layer_size);
  auto [manifest, manifest_size] = add_blob(dir + "/manifest");
  const std::string name = "libshim.test/busybox:latest";
  std::ofstream(dir + "/index.json") << fmt::format(
      R"({{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
      R"("digest":"{}","size":{},"annotations":{{"io.containerd.image.name":"{}"}}}}]}})",
      manifest, manifest_size, name);
  std::ofstream(dir + "/oci-layout") << R"({"imageLayoutVersion":"1.0.0"})";
  require(run_command({"tar", "-C", dir, "-cf", fx.dir() + "/busybox.tar", "index.json", "oci-layout", "blobs"}).ok(),
          "tar of the layout");
  fx.ctr_ok({"image", "import", fx.dir() + "/busybox.tar"});  // throws with the output
  return name;
}

}  // namespace shim::test
