// containerd-shim-wasm-v1 end to end, under containerd 1.6, 1.7 and 2.1 ([multi-version]):
// WASI modules built from tests/wasm/modules/*.c run as containers through `ctr run` with
// the real shim, runc and WasmEdge. Each case starts its own containerd; few cases on
// purpose. They skip when the engine is not there (cmake/fetch-wasmedge.sh) or the
// modules could not be built (cmake/WasiModules.cmake).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "engine.h"
#include "shim/fs.h"
#include "shim/pb/containerd/types.pb.h"
#include "support/containerd_fixture.h"
#include "support/runc_e2e.h"
#include "wasm_manager.h"

namespace shim::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kShim = shim_build_dir() + "/shim-wasm/containerd-shim-wasm-v1";
const std::string kModules = LIBSHIM_WASM_MODULE_DIR;

// Why the Wasm cases cannot run here, or nullopt.
std::optional<std::string> wasm_unavailable() {
  shim_wasm::Engine engine;
  std::string root = shim_wasm::engine_root(LIBSHIM_WASMEDGE_ROOT);
  if (auto s = shim_wasm::find_engine(root, &engine); !s.ok()) return s.message();
  if (!fs::exists(kModules + "/hello.wasm")) {
    return fmt::format("no WASI modules in {} (clang cannot build wasm32-wasi here)", kModules);
  }
  if (!fs::exists(kShim)) return fmt::format("{} is not built", kShim);
  return std::nullopt;
}

#define SKIP_WITHOUT_WASM()                                                \
  do {                                                                     \
    LIBSHIM_SKIP_WITHOUT_CONTAINERD();                                     \
    if (auto unavailable = wasm_unavailable()) LIBSHIM_SKIP(*unavailable); \
  } while (false)

// How many lines of containerd's log (the shims' lines too) hold both texts.
int log_lines_with(const PrivateContainerd& fx, std::string_view a, std::string_view b) {
  std::ifstream log(fx.log_path());
  int count = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) ++count;
  }
  return count;
}

// Whether such a line shows within 5 s: containerd copies a shim's log asynchronously.
bool eventually_log_lines_with(const PrivateContainerd& fx, std::string_view a,
                               std::string_view b) {
  for (int i = 0; i < 50; ++i) {
    if (log_lines_with(fx, a, b) > 0) return true;
    ::usleep(100'000);
  }
  return false;
}

// A module whose start section calls WASI's proc_exit(7); its _start returns at once.
std::string start_section_module() {
  const std::string wasi = "wasi_snapshot_preview1";
  std::string m("\0asm\x01\0\0\0", 8);
  m += std::string("\x01\x08\x02\x60\x01\x7f\x00\x60\x00\x00", 10);  // (i32)->(), ()->()
  m += std::string("\x02\x24\x01", 3) + static_cast<char>(wasi.size()) + wasi + "\x09" +
       "proc_exit" + std::string("\x00\x00", 2);  // func 0: proc_exit
  m += std::string("\x03\x03\x02\x01\x01", 5);    // funcs 1, 2: ()->()
  m += std::string("\x05\x03\x01\x00\x01", 5);    // a memory of 1 page
  m += std::string("\x07\x13\x02\x06memory\x02\x00\x06_start\x00\x02", 21);
  m += std::string("\x08\x01\x01", 3);  // start: func 1
  m += std::string("\x0a\x0b\x02\x06\x00\x41\x07\x10\x00\x0b\x02\x00\x0b", 13);
  return m;
}

// A module whose load costs the engine hundreds of MiB although its bytes pass the
// zygote's static bounds: after `unreachable`, 170 000 nested blocks of a type of 64
// params and 64 results (the validator keeps every open block's types). Its own process
// then fails to load it (the outer block leaves 64 values in a () -> () function).
std::string costly_module() {
  auto leb = [](std::size_t n) {
    std::string out;
    do {
      unsigned char b = n & 0x7f;
      n >>= 7;
      out.push_back(static_cast<char>(n != 0 ? b | 0x80 : b));
    } while (n != 0);
    return out;
  };
  auto section = [&leb](char id, const std::string& payload) {
    return std::string(1, id) + leb(payload.size()) + payload;
  };
  const std::string i32s = leb(64) + std::string(64, '\x7f');
  const std::size_t blocks = 170000;
  std::string body = std::string("\x00\x00", 2);                // no locals; unreachable
  for (std::size_t i = 0; i < blocks; ++i) body += "\x02\x01";  // block (type 1)
  body += std::string(blocks + 1, '\x0b');
  return std::string("\0asm\x01\0\0\0", 8) +
         section(1, std::string("\x02\x60\x00\x00\x60", 5) + i32s + i32s) +
         section(3, std::string("\x01\x00", 2)) +
         section(7, std::string("\x01\x06_start\x00\x00", 10)) +
         section(10, "\x01" + leb(body.size()) + body);
}

// A private containerd and a rootfs holding the test modules, busybox (for native
// entrypoints and execs) and a file for the module to read.
struct WasmSetup {
  PrivateContainerd fx;
  std::string rootfs = fx.dir() + "/rootfs";

  explicit WasmSetup(ContainerdOptions options = {}) : fx(std::move(options)) {
    make_busybox_rootfs(rootfs);
    for (const auto& entry : fs::directory_iterator(kModules)) {
      if (entry.path().extension() == ".wasm") {
        fs::copy_file(entry.path(), rootfs + "/" + entry.path().filename().string());
      }
    }
    std::ofstream(rootfs + "/etc/message") << "a file in the rootfs\n";
  }

  // ctr run <flags> --runtime <shim> <fifo flags> --rootfs <rootfs> <id> <args>
  std::vector<std::string> run(const std::vector<std::string>& flags, const std::string& id,
                               const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"run"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--runtime", fs::canonical(kShim).string()});
    for (const auto& f : fx.run_flags(/*with_runc_root=*/false)) argv.push_back(f);
    argv.insert(argv.end(), {"--rootfs", rootfs, id});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  std::vector<std::string> exec(const std::string& id, const std::string& exec_id,
                                const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"task", "exec"};
    for (const auto& f : fx.run_flags(false)) argv.push_back(f);
    argv.insert(argv.end(), {"--exec-id", exec_id, id});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  std::string task_status(const std::string& id) const {
    auto ls = fx.ctr_ok({"task", "ls"});
    std::istringstream lines(ls.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::string task, pid, status;
      if (words >> task >> pid >> status && task == id) return status;
    }
    return "";
  }
  bool wait_status(const std::string& id, const std::string& status) const {
    for (int i = 0; i < 100; ++i) {
      if (task_status(id) == status) return true;
      ::usleep(100'000);
    }
    return false;
  }
};

TEST_CASE("wasm: a module runs as a container: args, env, stdio, exit codes, files",
          "[wasm-e2e][multi-version]") {
  SKIP_WITHOUT_WASM();
  WasmSetup s;
  auto events = s.fx.subscribe_events();

  auto hello = s.fx.ctr(
      s.run({"--rm", "--env", "GREETING=hi there"}, "hello", {"/hello.wasm", "3", "two words"}));
  CHECK(hello.exit_code == 3);
  CHECK(hello.out ==
        "hello from wasm\nargv[0]=hello.wasm\nargv[1]=3\nargv[2]=two words\nGREETING=hi there\n");
  CHECK(hello.err == "to stderr\n");
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"hello\""}, 10s));
  CHECK(event_topics_for(*events, "hello") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"});

  // The zygote made hello.wasm ready before the first fork (shim-wasm/zygote/
  // module_cache.h); this one runs from that, as does any later container of it.
  auto again = s.fx.ctr(s.run({"--rm"}, "hello-again", {"/hello.wasm", "5"}));
  CHECK(again.exit_code == 5);
  CHECK(again.out == "hello from wasm\nargv[0]=hello.wasm\nargv[1]=5\nGREETING=(unset)\n");
  CHECK(log_lines_with(s.fx, "module made ready", "module=/hello.wasm") == 1);

  // A mount of the spec over the module's dir: the zygote reads the rootfs from the host
  // and finds the image's file, hello.wasm's bytes, ready; the child sees the mounted
  // file (read-file.wasm) and must run that one.
  fs::create_directories(s.rootfs + "/shadow");
  fs::copy_file(kModules + "/hello.wasm", s.rootfs + "/shadow/m.wasm");
  const std::string over = s.fx.dir() + "/over";
  fs::create_directories(over);
  fs::copy_file(kModules + "/read-file.wasm", over + "/m.wasm");
  auto shadowed = s.fx.ctr(
      s.run({"--rm", "--mount", fmt::format("type=bind,src={},dst=/shadow,options=rbind:ro", over)},
            "shadowed", {"/shadow/m.wasm", "/etc/message"}));
  CHECK(shadowed.exit_code == 0);
  CHECK(shadowed.out == "a file in the rootfs\n");
  CHECK(log_lines_with(s.fx, "module made ready", "module=/hello.wasm") == 1);
  CHECK(log_lines_with(s.fx, "id=shadowed", "reason=") == 0);  // the zygote ran it

  // A shared library where the module was (after Create checked the image's file):
  // WasmEdge's loader, given a path, would dlopen it and run its constructor in a copy
  // of the zygote, which holds other containers' modules. The child loads only a
  // module's bytes.
  const std::string native = s.fx.dir() + "/native";
  fs::create_directories(native);
  fs::copy_file(LIBSHIM_NATIVE_PROBE, native + "/m.wasm");
  auto library = s.fx.ctr(s.run(
      {"--rm", "--mount", fmt::format("type=bind,src={},dst=/shadow,options=rbind:ro", native)},
      "shared-library", {"/shadow/m.wasm"}));
  CHECK(library.exit_code == 134);
  CHECK(library.out.find("native code ran") == std::string::npos);
  CHECK(library.err == "wasm: /shadow/m.wasm is not a WebAssembly module\n");

  // A start section is the module's own code, run at instantiation: never in the
  // zygote (its proc_exit would end it), only in the container's process, whose exit
  // status it gives.
  std::ofstream(s.rootfs + "/start.wasm", std::ios::binary) << start_section_module();
  auto started = s.fx.ctr(s.run({"--rm"}, "start-section", {"/start.wasm"}));
  CHECK(started.exit_code == 7);
  CHECK(log_lines_with(s.fx, "module made ready", "module=/start.wasm") == 0);
  // The zygote's stderr follows the shared shim's log to a live task's FIFO: hello's
  // task, the first, is gone, and this line still reaches containerd's log.
  CHECK(eventually_log_lines_with(
      s.fx, "msg=\"wasm zygote: module left to its process\" bytes=103 module=/start.wasm",
      "reason=\"a start section\""));
  // A module that passes the zygote's static bounds but whose load grows past 64 MiB (to
  // ~300 MiB) is killed in the zygote's trial copy and left to its own process, where
  // the engine refuses it: 134. (Past 64 MiB or, on a busy machine, 500 ms of CPU.)
  std::ofstream(s.rootfs + "/costly.wasm", std::ios::binary) << costly_module();
  auto costly = s.fx.ctr(s.run({"--rm"}, "costly", {"/costly.wasm"}), 60s);
  CHECK(costly.exit_code == 134);
  CHECK(eventually_log_lines_with(s.fx, "module=/costly.wasm", "reason=\"its trial load"));
  auto after = s.fx.ctr(s.run({"--rm"}, "after-start", {"/hello.wasm", "4"}));
  CHECK(after.exit_code == 4);  // the same zygote still serves
  CHECK(log_lines_with(s.fx, "wasm zygote started", "") == 1);

  // A seccomp profile is not the zygote's to apply: the module then runs in the engine's
  // CLI inside runc's container, with the same args, env, stdio and exit code.
  auto through_runc = s.fx.ctr(s.run({"--rm", "--seccomp", "--env", "GREETING=hi there"},
                                     "hello-runc", {"/hello.wasm", "3", "two words"}));
  CHECK(through_runc.exit_code == 3);
  CHECK(through_runc.out == hello.out);
  CHECK(through_runc.err == "to stderr\n");
  std::ifstream log(s.fx.log_path());
  std::string log_text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(log_text.find("id=hello-runc") != std::string::npos);
  CHECK(log_text.find("reason=\"the zygote does not apply linux.seccomp\"") != std::string::npos);

  // stdin round trip and 16 MiB of stdout, byte-exact.
  std::string input;
  for (int i = 0; i < 20000; ++i) input += fmt::format("line {}\n", i);
  auto cat = s.fx.ctr(s.run({"--rm"}, "cat", {"/cat.wasm"}), 60s, input);
  CHECK(cat.exit_code == 0);
  CHECK(cat.out == input);
  auto big = s.fx.ctr(s.run({"--rm"}, "big", {"/big-output.wasm", "16"}), 120s);
  REQUIRE(big.exit_code == 0);
  REQUIRE(big.out.size() == 16u << 20);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < big.out.size(); ++i) {
    if (static_cast<unsigned char>(big.out[i]) != (i * 7 + i / 4096) % 251) ++bad;
  }
  CHECK(bad == 0);

  // The rootfs is the module's "/": its files are readable, the host's are not.
  std::string host_file = s.fx.dir() + "/host-only";
  std::ofstream(host_file) << "secret\n";
  auto inside = s.fx.ctr(s.run({"--rm"}, "read-in", {"/read-file.wasm", "/etc/message"}));
  CHECK(inside.exit_code == 0);
  CHECK(inside.out == "a file in the rootfs\n");
  auto outside = s.fx.ctr(s.run({"--rm"}, "read-out", {"/read-file.wasm", host_file}));
  CHECK(outside.exit_code == 1);
  CHECK(outside.out == fmt::format("cannot open {}: No such file or directory\n", host_file));

  // A trap ends the module as WasmEdge's CLI does: SIGABRT's status, and the engine's
  // report of the trap (WasmEdge logs to stdout).
  auto trap = s.fx.ctr(s.run({"--rm"}, "trap", {"/trap.wasm"}));
  CHECK(trap.exit_code == 134);
  CHECK(trap.out.starts_with("about to trap\n"));
  CHECK(trap.out.find("execution failed: unreachable") != std::string::npos);
}

TEST_CASE("wasm: exec, pause and resume, metrics, SIGKILL, containerd restart, native containers",
          "[wasm-e2e][multi-version]") {
  SKIP_WITHOUT_WASM();
  WasmSetup s;
  // A volume: an exec's module may be there rather than in the image.
  const std::string volume = s.fx.dir() + "/volume";
  fs::create_directories(volume);
  fs::copy_file(kModules + "/hello.wasm", volume + "/tool.wasm");
  REQUIRE(s.fx.ctr_ok(s.run({"-d", "--mount",
                             fmt::format("type=bind,src={},dst=/data,options=rbind:ro", volume)},
                            "spin", {"/spin.wasm"}))
              .ok());
  REQUIRE(s.wait_status("spin", "RUNNING"));

  auto module_exec = s.fx.ctr(s.exec("spin", "e1", {"/hello.wasm", "7"}));
  CHECK(module_exec.exit_code == 7);
  CHECK(module_exec.out.starts_with("hello from wasm\nargv[0]=hello.wasm\nargv[1]=7\n"));
  // A native exec sees the container's rootfs as a shell expects it.
  auto native_exec = s.fx.ctr(s.exec("spin", "e2", {"/bin/cat", "/etc/message"}));
  CHECK(native_exec.exit_code == 0);
  CHECK(native_exec.out == "a file in the rootfs\n");
  auto volume_exec = s.fx.ctr(s.exec("spin", "e4", {"/data/tool.wasm", "9"}));
  CHECK(volume_exec.exit_code == 9);
  CHECK(volume_exec.out.starts_with("hello from wasm\nargv[0]=tool.wasm\nargv[1]=9\n"));
  // A bad module fails the exec with the reason, as it fails a Create.
  std::ofstream(s.rootfs + "/text.wasm") << "not a module\n";
  auto bad_exec = s.fx.ctr(s.exec("spin", "e3", {"/text.wasm"}));
  CHECK(bad_exec.exit_code != 0);
  CHECK(bad_exec.err.find("wasm: /text.wasm is not a WebAssembly module (no \\0asm magic)") !=
        std::string::npos);

  REQUIRE(s.fx.ctr_ok({"task", "pause", "spin"}).ok());
  CHECK(s.task_status("spin") == "PAUSED");
  REQUIRE(s.fx.ctr_ok({"task", "resume", "spin"}).ok());
  CHECK(s.task_status("spin") == "RUNNING");
  auto metrics = s.fx.ctr_ok({"task", "metrics", "spin"});
  CHECK(metrics.out.find("memory.usage_in_bytes") != std::string::npos);
  CHECK(metrics.out.find("pids.current") != std::string::npos);  // the engine's threads count

  // Across a containerd restart the shim still serves the task.
  s.fx.restart();
  CHECK(s.task_status("spin") == "RUNNING");
  auto events = s.fx.subscribe_events();
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", "spin"}).ok());
  auto exit = events->wait_for_line({"/tasks/exit", "\"spin\""}, 10s);
  REQUIRE(exit);
  CHECK(exit->find("\"exit_status\":137") != std::string::npos);
  REQUIRE(s.wait_status("spin", "STOPPED"));
  REQUIRE(s.fx.ctr_ok({"task", "rm", "spin"}).ok());

  // A native entrypoint (a pause container's kind) runs as runc runs it.
  auto native = s.fx.ctr(s.run({"--rm"}, "native", {"/bin/sh", "-c", "echo native; exit 5"}));
  CHECK(native.exit_code == 5);
  CHECK(native.out == "native\n");
}

TEST_CASE("wasm: bad modules fail Create with the reason, nothing left behind, and an OOM kill",
          "[wasm-e2e][multi-version]") {
  SKIP_WITHOUT_WASM();
  WasmSetup s;
  std::ofstream(s.rootfs + "/text.wasm") << "not a module\n";
  struct Case {
    std::string id, module, error;
  };
  for (const Case& c : {Case{"text", "/text.wasm",
                             "wasm: /text.wasm is not a WebAssembly module (no \\0asm magic)"},
                        Case{"missing", "/missing.wasm",
                             "wasm: the module /missing.wasm is not in the container's rootfs"},
                        Case{"import", "/host-import.wasm",
                             "wasm: /host-import.wasm imports env.host_fn, which WASI does not "
                             "provide"}}) {
    INFO(c.id);
    auto r = s.fx.ctr(s.run({}, c.id, {c.module}));
    CHECK(r.exit_code != 0);
    CHECK(r.err.find(c.error) != std::string::npos);
    CHECK(s.task_status(c.id).empty());
    CHECK_FALSE(fs::exists(s.fx.bundle_dir(c.id)));
    CHECK(s.fx.ctr_ok({"container", "rm", c.id}).ok());
  }

  if (::access("/sys/fs/cgroup/memory/memory.oom_control", F_OK) != 0 &&
      ::access("/sys/fs/cgroup/cgroup.controllers", F_OK) != 0) {
    WARN("no memory cgroup controller: the OOM part is skipped");
    return;
  }
  auto events = s.fx.subscribe_events();
  auto oom = s.fx.ctr(s.run({"--rm", "--memory-limit", std::to_string(96u << 20)}, "oom",
                            {"/memory-hog.wasm", "512"}),
                      60s);
  CHECK(oom.exit_code == 137);
  REQUIRE(events->wait_for_line({"/tasks/delete", "\"oom\""}, 10s));
  CHECK(event_topics_for(*events, "oom") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/oom", "/tasks/exit",
                                 "/tasks/delete"});
}

// The pids of this containerd's shared Wasm shims (-id io.libshim.wasm.shared-<digest>).
std::vector<pid_t> shared_shims(const PrivateContainerd& fx) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string cmdline;
    if (!read_file(entry.path().string() + "/cmdline", &cmdline).ok()) continue;
    if (cmdline.find(fx.grpc_address()) == std::string::npos) continue;
    if (cmdline.find(std::string("-id") + '\0' + shim_wasm::kSharedGroup + '-') ==
        std::string::npos)
      continue;
    pids.push_back(std::stoi(entry.path().filename().string()));
  }
  return pids;
}

TEST_CASE("wasm: ungrouped containers share one shim, which lingers, then ends",
          "[wasm-e2e][multi-version]") {
  SKIP_WITHOUT_WASM();
  WasmSetup s(ContainerdOptions{.env = {fmt::format("{}=6", shim_wasm::kShimLingerEnv)}});
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "one", {"/spin.wasm"})).ok());
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "two", {"/spin.wasm"})).ok());
  auto native = s.fx.ctr(s.run({"--rm"}, "native", {"/bin/echo", "native"}));
  CHECK(native.exit_code == 0);
  CHECK(native.out == "native\n");
  CHECK(s.fx.shim_address("one") == s.fx.shim_address("two"));
  std::vector<pid_t> shims = shared_shims(s.fx);
  REQUIRE(shims.size() == 1);
  // A container that names a group of its own gets a shim of its own.
  REQUIRE(s.fx.ctr_ok(s.run({"-d", "--annotation", "io.containerd.runc.v2.group=own"}, "own",
                            {"/spin.wasm"}))
              .ok());
  CHECK(s.fx.shim_address("own") != s.fx.shim_address("one"));
  CHECK(shared_shims(s.fx) == shims);

  for (const char* id : {"one", "two"}) {
    REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", id}).ok());
    REQUIRE(s.wait_status(id, "STOPPED"));
    REQUIRE(s.fx.ctr_ok({"task", "rm", id}).ok());
  }
  // Unused, the shim lingers: the next container finds it.
  auto hello = s.fx.ctr(s.run({"--rm"}, "hello", {"/hello.wasm", "3"}));
  CHECK(hello.exit_code == 3);
  CHECK(hello.out.starts_with("hello from wasm\n"));
  CHECK(shared_shims(s.fx) == shims);
  ::usleep(1'000'000);
  CHECK(shared_shims(s.fx) == shims);  // not at once
  // ... and ends once the linger is over.
  bool ended = false;
  for (int i = 0; i < 150 && !ended; ++i) {
    ::usleep(100'000);
    ended = shared_shims(s.fx).empty();
  }
  CHECK(ended);
  CHECK(s.task_status("own") == "RUNNING");
}

TEST_CASE("wasm: a shared shim that ends or is wedged never fails the next container",
          "[wasm-e2e][multi-version]") {
  SKIP_WITHOUT_WASM();
  // No linger: a shim ends as its last container goes, while the other sequence's next
  // start looks for it (finds it reserved, or ending and gone: never ending under it).
  WasmSetup s(ContainerdOptions{.env = {fmt::format("{}=0", shim_wasm::kShimLingerEnv)}});
  auto sequence = [&s](char name) {
    std::vector<std::string> failures;
    for (int i = 0; i < 6; ++i) {
      std::string id = fmt::format("{}{}", name, i);
      auto r = s.fx.ctr(s.run({"--rm"}, id, {"/hello.wasm", std::to_string(i)}));
      if (r.exit_code != i || !r.out.starts_with("hello from wasm\n")) {
        failures.push_back(
            fmt::format("{}: exit {}, out {:?}, err {:?}", id, r.exit_code, r.out, r.err));
      }
    }
    return failures;
  };
  auto a = std::async(std::launch::async, sequence, 'a');
  auto b = std::async(std::launch::async, sequence, 'b');
  CHECK(a.get() == std::vector<std::string>{});
  CHECK(b.get() == std::vector<std::string>{});
  // With no container left, the last shim ends at once.
  auto shims_settle_at = [&s](std::size_t count) {
    for (int i = 0; i < 100; ++i) {
      if (shared_shims(s.fx).size() == count) return true;
      ::usleep(50'000);
    }
    return false;
  };
  // Where it does not, the shims left and the log's non-debug lines say what kept them.
  auto why_not_settled = [&s] {
    std::string text;
    for (pid_t pid : shared_shims(s.fx)) {
      std::string cmdline;
      if (read_file(fmt::format("/proc/{}/cmdline", pid), &cmdline).ok())
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      text += fmt::format("left: {} {}\n", pid, cmdline);
    }
    std::istringstream lines(s.fx.log_tail(2000));
    for (std::string line; std::getline(lines, line);)
      if (line.find("level=debug") == std::string::npos) text += line + "\n";
    return text;
  };
  bool settled = shims_settle_at(0);
  if (!settled) UNSCOPED_INFO(why_not_settled());
  CHECK(settled);

  // A shared shim that does not answer: the next container gets a shim of its own.
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "spin", {"/spin.wasm"})).ok());
  settled = shims_settle_at(1);
  if (!settled) UNSCOPED_INFO(why_not_settled());
  REQUIRE(settled);
  const pid_t wedged = shared_shims(s.fx).at(0);
  REQUIRE(::kill(wedged, SIGSTOP) == 0);
  struct Resume {
    pid_t pid;
    ~Resume() { ::kill(pid, SIGCONT); }
  } resume{wedged};
  auto alone = s.fx.ctr(s.run({"--rm"}, "alone", {"/hello.wasm", "4"}));
  REQUIRE(::kill(wedged, SIGCONT) == 0);
  CHECK(alone.exit_code == 4);
  std::string log = s.fx.log_tail(400);
  CHECK(log.find("shared shim not used, this task has a shim of its own") != std::string::npos);
  CHECK(log.find("context deadline exceeded") != std::string::npos);
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", "spin"}).ok());
  REQUIRE(s.wait_status("spin", "STOPPED"));
  REQUIRE(s.fx.ctr_ok({"task", "rm", "spin"}).ok());
}

TEST_CASE(
    "wasm: -info names the engine, and without one a module fails at Create while native runs",
    "[wasm-e2e]") {
  SKIP_WITHOUT_WASM();
  // -info as containerd 2.x runs it (no options on stdin).
  CommandResult info = run_command({kShim, "-info"});
  REQUIRE(info.exit_code == 0);
  containerd::types::RuntimeInfo runtime_info;
  REQUIRE(runtime_info.ParseFromString(info.out));
  CHECK(runtime_info.name() == "io.containerd.wasm.v1");
  CHECK(runtime_info.annotations().at("io.libshim.wasm.engine").starts_with("wasmedge 0."));
  CHECK(runtime_info.annotations().at("io.libshim.wasm.engine-root") ==
        shim_wasm::engine_root(LIBSHIM_WASMEDGE_ROOT));

  // The shim inherits containerd's environment, and so its engine override.
  const char* saved = ::getenv(shim_wasm::kEngineRootEnv);
  std::string saved_value = saved ? saved : "";
  ::setenv(shim_wasm::kEngineRootEnv, "/nonexistent-engine", 1);
  struct Restore {
    const char* saved;
    std::string value;
    ~Restore() {
      if (saved) {
        ::setenv(shim_wasm::kEngineRootEnv, value.c_str(), 1);
      } else {
        ::unsetenv(shim_wasm::kEngineRootEnv);
      }
    }
  } restore{saved, saved_value};
  CommandResult no_engine_info = run_command({kShim, "-info"});
  REQUIRE(runtime_info.ParseFromString(no_engine_info.out));
  CHECK(runtime_info.annotations().at("io.libshim.wasm.engine") ==
        "none (the WasmEdge engine is not usable at /nonexistent-engine: no usr/bin/wasmedge (set "
        "LIBSHIM_WASMEDGE_ROOT to the root whose usr/ holds it, or run cmake/fetch-wasmedge.sh))");

  WasmSetup s;
  auto module = s.fx.ctr(s.run({"--rm"}, "no-engine", {"/hello.wasm"}));
  CHECK(module.exit_code != 0);
  CHECK(module.err.find("wasm: the WasmEdge engine is not usable at /nonexistent-engine: no "
                        "usr/bin/wasmedge") != std::string::npos);
  auto native = s.fx.ctr(s.run({"--rm"}, "native", {"/bin/echo", "still runs"}));
  CHECK(native.exit_code == 0);
  CHECK(native.out == "still runs\n");
}

}  // namespace
}  // namespace shim::test
