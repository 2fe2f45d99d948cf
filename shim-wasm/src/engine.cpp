#include "engine.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace shim_wasm {
namespace {

namespace fs = std::filesystem;

std::string join(const std::string& dir, const std::string& rel) {
  if (dir.empty() || dir == "/") return "/" + rel;
  return dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);  // follows symlinks (Debian's loader is one)
}

// The usr/lib subdirectory (multiarch triplet or lib64) holding `prefix`*, relative to
// usr/; empty when none.
std::string lib_dir_with(const fs::path& usr, std::string_view prefix) {
  std::error_code ec;
  for (std::string dir : {"lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "lib64", "lib"}) {
    for (fs::directory_iterator it(usr / dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().filename().string().starts_with(prefix)) return dir;
    }
    ec.clear();
  }
  return {};
}

}  // namespace

std::string Engine::usr() const { return join(root, "usr"); }

std::vector<std::string> Engine::command(const std::vector<std::string>& args) const {
  std::string base = kEngineMount;
  std::string path;
  for (const auto& dir : library_dirs) path += (path.empty() ? "" : ":") + base + "/" + dir;
  // --inhibit-cache: never the ld.so.cache of the host or of the image (/etc is the
  // rootfs's in a container), only the engine's own libraries.
  std::vector<std::string> out{base + "/" + loader, "--inhibit-cache", "--library-path", path,
                               base + "/" + binary};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

std::vector<std::string> Engine::host_command(const std::vector<std::string>& args) const {
  std::vector<std::string> out = loader_command({});
  out.push_back(usr() + "/" + binary);
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

std::vector<std::string> Engine::zygote_command(const std::string& zygote) const {
  // The zygote is ours, built on this host: a build that links libshim's dependencies
  // shared finds them in the system's directories, after the engine's own.
  std::vector<std::string> out =
      loader_command({"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                      "/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu"});
  out.push_back(zygote);
  return out;
}

std::vector<std::string> Engine::loader_command(const std::vector<std::string>& extra_dirs) const {
  std::string base = usr();
  std::string path;
  for (const auto& dir : library_dirs) path += (path.empty() ? "" : ":") + base + "/" + dir;
  for (const auto& dir : extra_dirs) path += ":" + dir;
  // --inhibit-cache: never the host's ld.so.cache, only the engine's own libraries.
  return {base + "/" + loader, "--inhibit-cache", "--library-path", path};
}

std::string engine_root(const std::string& build_default) {
  if (const char* env = std::getenv(kEngineRootEnv); env != nullptr && *env != '\0') return env;
  if (!build_default.empty() && is_file(fs::path(build_default) / "usr/bin/wasmedge")) {
    return build_default;
  }
  return "/";
}

shim::Status find_engine(const std::string& root, Engine* engine) {
  Engine found;
  found.root = root;
  fs::path usr(found.usr());
  auto missing = [&](std::string_view what) {
    return shim::Status(shim::Code::kFailedPrecondition,
                        fmt::format("the WasmEdge engine is not usable at {}: {} (set {} to the "
                                    "root whose usr/ holds it, or run cmake/fetch-wasmedge.sh)",
                                    root, what, kEngineRootEnv));
  };
  if (!is_file(usr / found.binary)) return missing("no usr/bin/wasmedge");
  std::string loader_dir = lib_dir_with(usr, "ld-linux");
  if (loader_dir.empty()) return missing("no ELF loader (ld-linux*) under usr/lib");
  std::error_code ec;
  for (fs::directory_iterator it(usr / loader_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.starts_with("ld-linux") && name.find(".so") != std::string::npos) {
      found.loader = loader_dir + "/" + name;
      break;
    }
  }
  std::string engine_dir = lib_dir_with(usr, "libwasmedge.so");
  if (engine_dir.empty()) return missing("no libwasmedge.so* under usr/lib");
  found.library_dirs.push_back(engine_dir);
  if (loader_dir != engine_dir) found.library_dirs.push_back(loader_dir);
  *engine = std::move(found);
  return {};
}

}  // namespace shim_wasm
