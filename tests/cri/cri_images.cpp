#include "cri_images.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/busybox_rootfs.h"

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;

void require(bool ok, const std::string& step) {
  if (!ok) throw std::runtime_error(fmt::format("CRI images: {} failed", step));
}

void run_ok(const std::vector<std::string>& argv) {
  CommandResult result = run_command(argv, {.timeout = std::chrono::seconds(120)});
  require(result.ok(), fmt::format("`{}`: {}", fmt::join(argv, " "), result.describe()));
}

// Moves `file` into blobs/sha256 under its digest; returns {"sha256:<hex>", size}.
std::pair<std::string, std::uintmax_t> add_blob(const fs::path& layout, const fs::path& file) {
  CommandResult sum = run_command({"sha256sum", file.string()});
  require(sum.ok() && sum.out.size() >= 64, "sha256sum " + file.string());
  const std::string hex = sum.out.substr(0, 64);
  const std::uintmax_t size = fs::file_size(file);
  fs::rename(file, layout / "blobs" / "sha256" / hex);
  return {"sha256:" + hex, size};
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  require(static_cast<bool>(out), "writing " + path.string());
}

// An OCI image layout tarball of one layer (`rootfs`) with the image config's `config`
// object `config_json`, named `name`; returns the tarball's path.
std::string write_layout_tarball(const fs::path& work, const std::string& stem,
                                 const fs::path& rootfs, const std::string& name,
                                 const std::string& config_json) {
  const fs::path layout = work / (stem + "-layout");
  fs::create_directories(layout / "blobs" / "sha256");
  // Sorted names, numeric owner, fixed mtime: the same inputs give the same digest.
  run_ok({"tar", "--sort=name", "--numeric-owner", "--owner=0", "--group=0", "--mtime=@0", "-C",
          rootfs.string(), "-cf", (layout / "layer").string(), "."});
  auto [layer, layer_size] = add_blob(layout, layout / "layer");
  write_file(layout / "config", fmt::format(R"({{"architecture":"amd64","os":"linux","config":{},)"
                                            R"("rootfs":{{"type":"layers","diff_ids":["{}"]}}}})",
                                            config_json, layer));
  auto [config, config_size] = add_blob(layout, layout / "config");
  write_file(
      layout / "manifest",
      fmt::format(R"({{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
                  R"("config":{{"mediaType":"application/vnd.oci.image.config.v1+json",)"
                  R"("digest":"{}","size":{}}},)"
                  R"("layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar",)"
                  R"("digest":"{}","size":{}}}]}})",
                  config, config_size, layer, layer_size));
  auto [manifest, manifest_size] = add_blob(layout, layout / "manifest");
  write_file(layout / "index.json",
             fmt::format(R"({{"schemaVersion":2,"manifests":[{{)"
                         R"("mediaType":"application/vnd.oci.image.manifest.v1+json",)"
                         R"("digest":"{}","size":{},"annotations":{{)"
                         R"("io.containerd.image.name":"{}"}}}}]}})",
                         manifest, manifest_size, name));
  write_file(layout / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  const std::string tarball = (work / (stem + ".tar")).string();
  run_ok({"tar", "-C", layout.string(), "-cf", tarball, "index.json", "oci-layout", "blobs"});
  return tarball;
}

void copy_executable(const std::string& from, const fs::path& to) {
  require(fs::exists(from), "finding " + from + " (build target cri_pause/cri_helper)");
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                          fs::perms::others_read | fs::perms::others_exec);
}

}  // namespace

ImageTarballs build_image_tarballs(const std::string& work_dir) {
  const fs::path work(work_dir);
  fs::create_directories(work);
  const fs::path pause_root = work / "pause-rootfs";
  fs::create_directories(pause_root);
  for (const char* dir : {"dev", "proc", "sys", "etc"}) fs::create_directories(pause_root / dir);
  copy_executable(LIBSHIM_CRI_PAUSE_BIN, pause_root / "pause");
  const fs::path busybox_root = work / "busybox-rootfs";
  make_busybox_rootfs(busybox_root.string());
  copy_executable(LIBSHIM_CRI_HELPER_BIN, busybox_root / "bin" / "helper");

  ImageTarballs tarballs;
  tarballs.pause =
      write_layout_tarball(work, "pause", pause_root, kPauseImage, R"({"Entrypoint":["/pause"]})");
  tarballs.busybox = write_layout_tarball(work, "busybox", busybox_root, kBusyboxImage,
                                          R"({"Env":["PATH=/bin"],"Cmd":["/bin/sh"]})");
  return tarballs;
}

std::string build_wasm_image_tarball(const std::string& work_dir) {
  const fs::path work(work_dir);
  const fs::path root = work / "wasm-rootfs";
  make_busybox_rootfs(root.string());
  std::size_t modules = 0;
  std::error_code ec;
  for (fs::directory_iterator it(LIBSHIM_CRI_WASM_MODULE_DIR, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() != ".wasm") continue;
    fs::copy_file(it->path(), root / it->path().filename(), fs::copy_options::overwrite_existing);
    ++modules;
  }
  require(modules > 0, fmt::format("finding WASI modules in {}", LIBSHIM_CRI_WASM_MODULE_DIR));
  write_file(root / "etc/message", "a file in the rootfs\n");
  return write_layout_tarball(work, "wasm", root, kWasmImage,
                              R"({"Env":["PATH=/bin"],"Entrypoint":["/hello.wasm"]})");
}

CommandResult ctr_k8s(const PrivateContainerd& fx, const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {fx.ctr_bin(), "--address", fx.grpc_address(), "-n",
                                   kCriNamespace};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, {.timeout = timeout});
}

void import_images(const PrivateContainerd& fx, const ImageTarballs& tarballs) {
  for (const auto& tarball : {tarballs.pause, tarballs.busybox, tarballs.wasm}) {
    if (tarball.empty()) continue;
    CommandResult result = ctr_k8s(fx, {"images", "import", tarball});
    if (!result.ok()) {
      throw std::runtime_error(fmt::format("ctr -n k8s.io images import {}: {}\nlog tail:\n{}",
                                           tarball, result.describe(), fx.log_tail()));
    }
  }
}

}  // namespace shim::test::cri
