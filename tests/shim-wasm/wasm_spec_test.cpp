// classify, wasm_spec, wasm_process and prepare_wasm_root on specs shaped like the ones
// containerd's `ctr run` and CRI write, and a rootfs in a temp dir.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "shim/fs.h"
#include "support/temp_dir.h"
#include "wasm_spec.h"

namespace {

namespace json = boost::json;

shim_wasm::Engine test_engine() {
  shim_wasm::Engine engine;
  engine.root = "/opt/engine";
  engine.loader = "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
  engine.library_dirs = {"lib/x86_64-linux-gnu"};
  return engine;
}

json::object process(json::array args, json::array env = {}, std::string cwd = "/") {
  return json::object{{"args", std::move(args)}, {"env", std::move(env)}, {"cwd", cwd}};
}

// A rootfs with /hello.wasm (a module), /bin/sh (not one), /app/noext (a module without the
// suffix) and /escape -> /etc/hostname (absolute: the container's, never the host's).
struct Rootfs {
  shim::test::TempDir dir{"wasm-"};
  Rootfs() {
    std::filesystem::create_directories(dir.path() + "/bin");
    std::filesystem::create_directories(dir.path() + "/app");
    std::filesystem::create_directories(dir.path() + "/etc");
    std::string magic("\0asm\x01\0\0\0", 8);
    REQUIRE(shim::write_file(dir.path() + "/hello.wasm", magic, 0644).ok());
    REQUIRE(shim::write_file(dir.path() + "/app/noext", magic, 0755).ok());
    REQUIRE(shim::write_file(dir.path() + "/bin/sh",
                             "\x7f"
                             "ELF",
                             0755)
                .ok());
    REQUIRE(shim::write_file(dir.path() + "/etc/hostname", "inside\n", 0644).ok());
    REQUIRE(::symlink("/etc/hostname", (dir.path() + "/escape").c_str()) == 0);
  }
  const std::string& path() const { return dir.path(); }
};

}  // namespace

TEST_CASE("classify: .wasm, the magic, PATH lookup and the cwd", "[wasm]") {
  Rootfs rootfs;
  shim_wasm::Entrypoint e;
  REQUIRE(shim_wasm::classify(process({"/hello.wasm", "3"}), rootfs.path(), &e).ok());
  CHECK(e.wasm);
  CHECK(e.path == "/hello.wasm");

  REQUIRE(shim_wasm::classify(process({"noext"}, {"PATH=/bin:/app"}), rootfs.path(), &e).ok());
  CHECK(e.wasm);
  CHECK(e.path == "/app/noext");

  REQUIRE(shim_wasm::classify(process({"./noext"}, {}, "/app"), rootfs.path(), &e).ok());
  CHECK(e.wasm);
  CHECK(e.path == "/app/noext");

  REQUIRE(shim_wasm::classify(process({"sh", "-c", "true"}), rootfs.path(), &e).ok());
  CHECK_FALSE(e.wasm);
  CHECK(e.path == "/bin/sh");

  // Named .wasm but missing: still a module entrypoint (its check then says it is missing).
  REQUIRE(shim_wasm::classify(process({"/missing.wasm"}), rootfs.path(), &e).ok());
  CHECK(e.wasm);
  CHECK(e.path == "/missing.wasm");

  CHECK(shim_wasm::classify(process({}), rootfs.path(), &e).code() == shim::Code::kInvalidArgument);

  // A NUL ends a C string: "/etc/shadow\0/\0.wasm" would be /etc/shadow to whoever opens it.
  using namespace std::string_literals;
  for (const shim::Status& nul :
       {shim_wasm::classify(process({"/etc/shadow\0/\0.wasm"s}), rootfs.path(), &e),
        shim_wasm::classify(process({"./m.wasm"}, {}, "/etc\0/app"s), rootfs.path(), &e)}) {
    CHECK(nul.code() == shim::Code::kInvalidArgument);
    CHECK(nul.message() == "the process's executable path holds a NUL byte");
  }
  // A PATH entry with one is no match, even where the path cut at it is a file
  // ("/hello.wasm\0x/hello.wasm" would open /hello.wasm).
  REQUIRE(shim_wasm::classify(process({"hello.wasm"}, {"PATH=/hello.wasm\0x"s}), rootfs.path(), &e)
              .ok());
  CHECK(e.path == "/hello.wasm");
}

TEST_CASE("open_in_rootfs resolves symlinks inside the rootfs", "[wasm]") {
  Rootfs rootfs;
  shim::UniqueFd fd = shim_wasm::open_in_rootfs(rootfs.path(), "/escape");
  REQUIRE(fd.get() >= 0);
  char buf[16] = {};
  CHECK(::read(fd.get(), buf, sizeof buf) == 7);
  CHECK(std::string(buf) == "inside\n");
  CHECK(shim_wasm::open_in_rootfs(rootfs.path(), "/../../../etc/passwd").get() < 0);
  // Cut at its NUL, the path would be the host's /etc/passwd through a root of "/".
  using namespace std::string_literals;
  CHECK(shim_wasm::open_in_rootfs("/\0"s + rootfs.path(), "/etc/passwd").get() < 0);
  CHECK(errno == EINVAL);
  CHECK(shim_wasm::open_in_rootfs(rootfs.path(), "/escape\0/x"s).get() < 0);
  CHECK(errno == EINVAL);
}

// A FIFO the container made would block whoever opens it for reading (the shim at
// Create, the zygote before a fork), a device node's open acts on the device: only a
// regular file is opened, and the others are refused at once.
TEST_CASE("open_in_rootfs opens only regular files", "[wasm]") {
  Rootfs rootfs;
  REQUIRE(::mkfifo((rootfs.path() + "/fifo.wasm").c_str(), 0644) == 0);
  CHECK(shim_wasm::open_in_rootfs(rootfs.path(), "/fifo.wasm").get() < 0);
  CHECK(errno == EINVAL);
  CHECK(shim_wasm::open_in_rootfs(rootfs.path(), "/app").get() < 0);
  CHECK(errno == EISDIR);
  shim::UniqueFd fd = shim_wasm::open_in_rootfs(rootfs.path(), "/hello.wasm");
  REQUIRE(fd.get() >= 0);
  CHECK((::fcntl(fd.get(), F_GETFL) & O_ACCMODE) == O_RDONLY);  // readable, not O_PATH
  char head[4];
  CHECK(::read(fd.get(), head, 4) == 4);
}

TEST_CASE("wasm_process runs the module in the engine with its args and env", "[wasm]") {
  json::object p = process({"/hello.wasm", "3", "x y"}, {"GREETING=hi", "LD_PRELOAD=/evil.so"});
  p["terminal"] = true;
  json::object out = shim_wasm::wasm_process(p, test_engine(), {true, "/hello.wasm"});
  json::array want{"/engine/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                   "--inhibit-cache",
                   "--library-path",
                   "/engine/usr/lib/x86_64-linux-gnu",
                   "/engine/usr/bin/wasmedge",
                   "--dir",
                   "/:/rootfs",
                   "--env",
                   "GREETING=hi",
                   "--env",
                   "LD_PRELOAD=/evil.so",
                   "/rootfs/hello.wasm",
                   "3",
                   "x y"};
  CHECK(out.at("args") == want);
  CHECK(out.at("env") == json::array{"PATH=/engine/usr/bin"});
  CHECK(out.at("cwd") == "/");
  CHECK(out.at("terminal") == true);  // the rest of the process is kept
}

TEST_CASE("wasm_spec: the rootfs and engine mounted, kernel file systems kept", "[wasm]") {
  json::object spec{
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"process", process({"/hello.wasm"})},
      {"mounts",
       json::array{
           {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
           {{"destination", "/dev/pts"}, {"type", "devpts"}, {"source", "devpts"}},
           {{"destination", "/sys/fs/cgroup"}, {"type", "cgroup"}, {"source", "cgroup"}},
           {{"destination", "/etc/hosts"}, {"type", "bind"}, {"source", "/var/lib/x/hosts"}},
           {{"destination", "data/../data"}, {"type", "bind"}, {"source", "/srv/data"}}}},
      {"linux", {{"namespaces", json::array{{{"type", "pid"}}}}}}};
  json::object out =
      shim_wasm::wasm_spec(spec, "/b/rootfs", "/b/wasm-root", test_engine(), {true, "/hello.wasm"});
  CHECK(out.at("root") == json::object{{"path", "/b/wasm-root"}, {"readonly", true}});
  const json::array& mounts = out.at("mounts").as_array();
  REQUIRE(mounts.size() == 7);
  CHECK(mounts[0] == json::object{{"destination", "/rootfs"},
                                  {"type", "bind"},
                                  {"source", "/b/rootfs"},
                                  {"options", {"rbind", "ro"}}});
  CHECK(mounts[1] == json::object{{"destination", "/engine/usr"},
                                  {"type", "bind"},
                                  {"source", "/opt/engine/usr"},
                                  {"options", {"rbind", "ro", "nosuid", "nodev"}}});
  CHECK(mounts[2].at("destination") == "/proc");
  CHECK(mounts[3].at("destination") == "/dev/pts");
  CHECK(mounts[4].at("destination") == "/sys/fs/cgroup");
  CHECK(mounts[5].at("destination") == "/rootfs/etc/hosts");
  CHECK(mounts[6].at("destination") == "/rootfs/data");
  CHECK(out.at("linux") == spec.at("linux"));
  CHECK(out.at("process").at("args").as_array().back() == "/rootfs/hello.wasm");
}

TEST_CASE("prepare_wasm_root links the rootfs's top level, not the kernel's dirs", "[wasm]") {
  Rootfs rootfs;
  std::filesystem::create_directories(rootfs.path() + "/proc");
  shim::test::TempDir bundle;
  std::string root = bundle.path() + "/wasm-root";
  REQUIRE(shim_wasm::prepare_wasm_root(root, rootfs.path()).ok());
  CHECK(std::filesystem::is_directory(root + "/rootfs"));
  CHECK(std::filesystem::is_directory(root + "/engine/usr"));
  CHECK(std::filesystem::read_symlink(root + "/bin") == "rootfs/bin");
  CHECK(std::filesystem::read_symlink(root + "/hello.wasm") == "rootfs/hello.wasm");
  CHECK_FALSE(std::filesystem::exists(root + "/proc"));
  // Twice (a Create tried again) is fine.
  CHECK(shim_wasm::prepare_wasm_root(root, rootfs.path()).ok());
}
