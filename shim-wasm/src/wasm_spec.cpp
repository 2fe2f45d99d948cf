#include "wasm_spec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/string.hpp>

#include "wasm_module.h"

namespace shim_wasm {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string string_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::vector<std::string> string_array(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::value* v = o.if_contains(key); v && v->is_array()) {
    for (const json::value& e : v->get_array()) {
      if (e.is_string()) out.emplace_back(e.get_string());
    }
  }
  return out;
}

// Mounts a Wasm container keeps where the spec puts them: the kernel's file systems.
bool is_system_destination(std::string_view dest) {
  for (std::string_view top : {"/proc", "/dev", "/sys"}) {
    if (dest == top ||
        (dest.starts_with(top) && dest.size() > top.size() && dest[top.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// "/" + path with "." and ".." resolved lexically (a container path).
std::string clean_path(const std::string& path) {
  return fs::path("/" + path).lexically_normal().string();
}

bool is_regular_in_rootfs(const std::string& rootfs, const std::string& path) {
  shim::UniqueFd fd = open_in_rootfs(rootfs, path);
  struct stat st;
  return fd.get() >= 0 && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string fd_path(const shim::UniqueFd& fd) { return fmt::format("/proc/self/fd/{}", fd.get()); }

}  // namespace

shim::Status classify(const json::object& process, const std::string& rootfs, Entrypoint* entry) {
  std::vector<std::string> args = string_array(process, "args");
  if (args.empty() || args[0].empty()) {
    return shim::Status(shim::Code::kInvalidArgument, "the process has no args");
  }
  const std::string& arg0 = args[0];
  Entrypoint found;
  if (arg0.find('/') != std::string::npos) {
    std::string cwd = string_field(process, "cwd");
    found.path = clean_path(arg0.front() == '/' ? arg0 : (cwd.empty() ? "/" : cwd) + "/" + arg0);
  } else {
    // As runc resolves a bare name: along the process's PATH, in the container.
    std::string path_var = kDefaultPath;
    for (const std::string& e : string_array(process, "env")) {
      if (e.starts_with("PATH=")) path_var = e.substr(5);
    }
    for (std::size_t at = 0; at <= path_var.size();) {
      std::size_t end = path_var.find(':', at);
      if (end == std::string::npos) end = path_var.size();
      std::string candidate = clean_path(path_var.substr(at, end - at) + "/" + arg0);
      if (is_regular_in_rootfs(rootfs, candidate)) {
        found.path = candidate;
        break;
      }
      at = end + 1;
    }
    if (found.path.empty()) found.path = clean_path(arg0);  // as named: reported if missing
  }
  // A C string ends at a NUL (from args[0], cwd or PATH): the path would name another file.
  if (found.path.find('\0') != std::string::npos) {
    return shim::Status(shim::Code::kInvalidArgument,
                        "the process's executable path holds a NUL byte");
  }
  found.wasm = arg0.ends_with(".wasm");
  if (!found.wasm) {
    shim::UniqueFd fd = open_in_rootfs(rootfs, found.path);
    found.wasm = fd.get() >= 0 && has_wasm_magic(fd_path(fd));
  }
  *entry = std::move(found);
  return {};
}

json::object wasm_process(const json::object& process, const Engine& engine,
                          const Entrypoint& entry) {
  std::vector<std::string> engine_args{"--dir", std::string("/:") + kRootfsMount};
  for (const std::string& e : string_array(process, "env")) {
    engine_args.push_back("--env");
    engine_args.push_back(e);
  }
  engine_args.push_back(std::string(kRootfsMount) + entry.path);
  std::vector<std::string> args = string_array(process, "args");
  for (std::size_t i = 1; i < args.size(); ++i) engine_args.push_back(args[i]);

  json::object out = process;
  json::array argv;
  for (const std::string& a : engine.command(engine_args)) argv.emplace_back(a);
  out["args"] = std::move(argv);
  // The engine's own environment: nothing of the container's (LD_* would reach the loader).
  out["env"] = json::array{json::string(fmt::format("PATH={}/bin", kEngineMount))};
  out["cwd"] = "/";
  return out;
}

json::object wasm_spec(const json::object& spec, const std::string& rootfs,
                       const std::string& wasm_root, const Engine& engine,
                       const Entrypoint& entry) {
  json::object out = spec;
  bool readonly = false;
  if (const json::value* root = spec.if_contains("root"); root && root->is_object()) {
    if (const json::value* ro = root->get_object().if_contains("readonly"); ro && ro->is_bool()) {
      readonly = ro->get_bool();
    }
  }
  out["root"] = json::object{{"path", wasm_root}, {"readonly", readonly}};

  json::array mounts;
  mounts.emplace_back(json::object{{"destination", kRootfsMount},
                                   {"type", "bind"},
                                   {"source", rootfs},
                                   {"options", json::array{"rbind", readonly ? "ro" : "rw"}}});
  mounts.emplace_back(json::object{{"destination", kEngineMount},
                                   {"type", "bind"},
                                   {"source", engine.usr()},
                                   {"options", json::array{"rbind", "ro", "nosuid", "nodev"}}});
  if (const json::value* m = spec.if_contains("mounts"); m && m->is_array()) {
    for (const json::value& v : m->get_array()) {
      if (!v.is_object()) continue;
      json::object mount = v.get_object();
      std::string dest = string_field(mount, "destination");
      if (!is_system_destination(clean_path(dest))) {
        mount["destination"] = std::string(kRootfsMount) + clean_path(dest);
      }
      mounts.emplace_back(std::move(mount));
    }
  }
  out["mounts"] = std::move(mounts);

  json::object process;
  if (const json::value* p = spec.if_contains("process"); p && p->is_object()) {
    process = p->get_object();
  }
  out["process"] = wasm_process(process, engine, entry);
  return out;
}

shim::Status prepare_wasm_root(const std::string& wasm_root, const std::string& rootfs) {
  std::error_code ec;
  fs::path root(wasm_root);
  fs::create_directories(root / "rootfs", ec);
  if (!ec) fs::create_directories(root / "engine/usr", ec);
  if (ec) {
    return shim::Status(shim::Code::kInternal,
                        fmt::format("cannot make {}: {}", wasm_root, ec.message()));
  }
  for (fs::directory_iterator it(rootfs, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == "proc" || name == "dev" || name == "sys" || name == "rootfs" || name == "engine") {
      continue;
    }
    std::error_code link_ec;
    fs::create_symlink(fs::path("rootfs") / name, root / name, link_ec);
    if (link_ec && link_ec != std::errc::file_exists) {
      return shim::Status(shim::Code::kInternal,
                          fmt::format("cannot link {}/{}: {}", wasm_root, name, link_ec.message()));
    }
  }
  if (ec) {
    return shim::Status(shim::Code::kInternal,
                        fmt::format("cannot list the rootfs {}: {}", rootfs, ec.message()));
  }
  return {};
}

}  // namespace shim_wasm
