// The shim binary protocol of the built shim-example, run as a subprocess exactly as
// containerd 1.6, 1.7 and 2.3 run it (runtime/v2/binary.go, core/runtime/v2/binary.go): argv, env, stdin, cwd =
// bundle, own process group, combined-output-until-EOF. No containerd involved.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "shim/pb/containerd/bootstrap.pb.h"
#include "shim/pb/containerd/events_service.pb.h"
#include "shim/pb/runc/runc_options.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "shim/pb/any.pb.h"
#include "shim/pb/empty.pb.h"
#include "shim/ttrpc/router.h"
#include "ttrpc/server.h"
#include "support/io_thread.h"
#include "support/containerd_fixture.h"
#include "support/temp_dir.h"
#include "support/ttrpc_harness.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace bootstrap_v1 = containerd::runtime::bootstrap::v1;
using namespace std::chrono_literals;
using shim::test::TempDir;

const std::string kShimBinary = shim::test::shim_build_dir() + "/shim-example/containerd-shim-example-v1";
constexpr const char* kNamespace = "spns";
constexpr const char* kContainerdBinary = "/usr/bin/containerd";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> split_nul(const std::string& raw) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < raw.size()) {
    std::size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    out.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string link_target(const std::string& path) {
  std::error_code ec;
  auto target = fs::read_symlink(path, ec);
  return ec ? std::string() : target.string();
}

int read_int_file(const std::string& path) { return std::stoi(slurp(path)); }

// What one run of the shim binary produced. stdout and stderr are kept apart (containerd
// merges them, so "stderr empty" is what keeps the answer clean).
struct ShimRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  bool output_eof = false;  // both pipes reached EOF: nobody else holds them
  std::chrono::milliseconds took{0};
  pid_t pid = -1;

  std::string describe() const {
    return fmt::format("exit {}, eof {}, {} ms; stdout: {:?}; stderr: {:?}", exit_code,
                       output_eof, took.count(), out, err);
  }
};

// fork+exec `argv` with exactly `env`, `stdin_data` on a pipe, cwd and a new process
// group as containerd does; waits for EOF on stdout/stderr (not just for the exit), as
// containerd's CombinedOutput does. Gives up after `timeout`.
ShimRun run_shim(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 const std::string& stdin_data, const std::string& cwd,
                 std::chrono::milliseconds timeout = 10s) {
  int in[2], out[2], err[2];
  REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
  std::vector<char*> c_argv, c_env;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  for (const auto& e : env) c_env.push_back(const_cast<char*>(e.c_str()));
  c_env.push_back(nullptr);

  auto started = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (!stdin_data.empty()) {
    CHECK(::write(in[1], stdin_data.data(), stdin_data.size()) ==
          static_cast<ssize_t>(stdin_data.size()));
  }
  ::close(in[1]);

  ShimRun run;
  run.pid = pid;
  auto deadline = started + timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_count = 2;
  while (open_count > 0 && std::chrono::steady_clock::now() < deadline) {
    if (::poll(fds, 2, 20) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  run.output_eof = open_count == 0;
  for (auto& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(5ms);
  }
  run.took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// Our environment without anything containerd sets for a shim, plus `extra`.
std::vector<std::string> clean_env(const std::vector<std::string>& extra) {
  static const char* const kContainerdVars[] = {"TTRPC_ADDRESS=", "GRPC_ADDRESS=", "NAMESPACE=",
                                                "MAX_SHIM_VERSION=", "GOMAXPROCS=",
                                                "SCHED_CORE=", "NOTIFY_SOCKET="};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool theirs = std::any_of(std::begin(kContainerdVars), std::end(kContainerdVars),
                              [&](const char* var) { return entry.starts_with(var); });
    if (!theirs) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

enum class Caller { k1_6, k1_7, k2_3 };

// While alive, orphans (the daemons, once their `start` exits) become our children, so
// their exit status can be collected.
class SubreaperScope {
 public:
  SubreaperScope() { REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0); }
  ~SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

// A temp dir with a fake containerd context: addresses, bundles, a short socket dir.
class ShimSandbox {
 public:
  ShimSandbox()
      : dir_("sp-"),
        grpc_(dir_.sub("c.sock")),
        ttrpc_(grpc_ + ".ttrpc"),
        socket_dir_(dir_.sub("s")),
        binary_(fs::canonical(kShimBinary).string()) {}

  // Daemons a failed test left behind: killed, and reaped when they are our children.
  // Found by cwd too: a daemon still inside execve has no cmdline yet.
  ~ShimSandbox() {
    std::vector<pid_t> left = processes_with_cwd_under(dir_.path());
    for (pid_t pid : left) ::kill(pid, SIGKILL);
    for (pid_t pid : left) {
      for (int i = 0; i < 200 && ::waitpid(pid, nullptr, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(5ms);
      }
    }
    for (const auto& path : sockets_) ::unlink(path.c_str());
    for (int fd : log_fds_) ::close(fd);
  }

  const std::string& dir() const { return dir_.path(); }
  const std::string& grpc() const { return grpc_; }
  const std::string& ttrpc() const { return ttrpc_; }
  const std::string& socket_dir() const { return socket_dir_; }
  const std::string& binary() const { return binary_; }

  // <dir>/<id> with config.json (annotations as given) and the `log` FIFO containerd
  // creates and keeps open.
  std::string make_bundle(const std::string& id,
                          const std::vector<std::pair<std::string, std::string>>& annotations = {},
                          const std::vector<std::string>& args = {"/bin/true"}) {
    std::string bundle = dir_.sub(id);
    fs::create_directories(bundle + "/rootfs");
    std::string notes, quoted_args;
    for (const auto& [key, value] : annotations) {
      notes += fmt::format("{}\"{}\":\"{}\"", notes.empty() ? "" : ",", key, value);
    }
    for (const auto& arg : args) {
      quoted_args += fmt::format("{}\"{}\"", quoted_args.empty() ? "" : ",", arg);
    }
    std::ofstream(bundle + "/config.json")
        << fmt::format(R"({{"ociVersion":"1.0.2","process":{{"args":[{}],"cwd":"/"}},)"
                       R"("root":{{"path":"rootfs"}},"annotations":{{{}}}}})",
                       quoted_args, notes);
    std::string fifo = bundle + "/log";
    REQUIRE(::mkfifo(fifo.c_str(), 0700) == 0);
    int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    REQUIRE(fd >= 0);
    log_fds_.push_back(fd);
    return bundle;
  }

  // The socket the Go shim and libshim compute for `group` in `socket_dir`.
  std::string socket_path(const std::string& group, const std::string& socket_dir) {
    std::string path = shim::test::go_shim_socket_path(grpc_, kNamespace, group);
    path = socket_dir + "/" + fs::path(path).filename().string();
    sockets_.push_back(path);
    return path;
  }
  std::string default_socket_path(const std::string& group) {
    return socket_path(group, "/run/containerd/s");
  }

  // `start` as `caller` runs it, with `stdin_data` (nullopt: what that caller sends).
  ShimRun start(Caller caller, const std::string& id, const std::string& bundle,
                std::optional<std::string> stdin_data = std::nullopt, bool debug = false) {
    std::vector<std::string> argv = {binary_,    "-namespace",      kNamespace,
                                     "-address", grpc_,             "-publish-binary",
                                     kContainerdBinary, "-id",      id};
    if (caller == Caller::k2_3) argv.insert(argv.end(), {"-bundle", bundle});
    if (debug) argv.push_back("-debug");
    argv.push_back("start");
    return run_shim(argv, env_for(caller), stdin_data.value_or(default_stdin(caller, id, debug)),
                    bundle);
  }

  std::vector<std::string> env_for(Caller caller) const {
    std::vector<std::string> extra = {"GOMAXPROCS=2"};
    if (caller != Caller::k1_6) extra.push_back("MAX_SHIM_VERSION=2");
    extra.push_back("TTRPC_ADDRESS=" + ttrpc_);
    if (caller != Caller::k1_6) {
      extra.push_back("GRPC_ADDRESS=" + grpc_);
      extra.push_back(fmt::format("NAMESPACE={}", kNamespace));
    }
    return clean_env(extra);
  }

  std::string default_stdin(Caller caller, const std::string& id, bool debug) const {
    if (caller == Caller::k1_6) return {};  // ctr with a non-runc runtime sends no options
    if (caller == Caller::k1_7) return runc_options_any().SerializeAsString();
    bootstrap_v1::BootstrapParams params;
    params.set_instance_id(id);
    params.set_namespace_(kNamespace);
    params.set_log_level(debug ? bootstrap_v1::LOG_LEVEL_DEBUG : bootstrap_v1::LOG_LEVEL_INFO);
    params.set_containerd_version("v2.3.0");
    params.set_containerd_ttrpc_address(ttrpc_);
    params.set_containerd_grpc_address(grpc_);
    params.set_containerd_binary(kContainerdBinary);
    *params.add_extensions()->mutable_value() = runc_options_any();
    params.set_socket_dir(socket_dir_);
    return params.SerializeAsString();
  }

  static shim::pb::Any runc_options_any() {
    containerd::runc::v1::Options options;
    options.set_root("/run/containerd/runc");
    shim::pb::Any any;
    any.set_type_url("containerd.runc.v1.Options");
    any.set_value(options.SerializeAsString());
    return any;
  }

  // Processes (other than us) whose cwd is `dir` or below: every daemon of this sandbox
  // from the moment it is spawned (its cwd is set before the exec).
  static std::vector<pid_t> processes_with_cwd_under(const std::string& dir) {
    std::vector<pid_t> pids;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (!std::all_of(name.begin(), name.end(), ::isdigit) || std::stoi(name) == ::getpid()) {
        continue;
      }
      std::string cwd = link_target(entry.path().string() + "/cwd");
      if (cwd == dir || cwd.starts_with(dir + "/")) pids.push_back(std::stoi(name));
    }
    return pids;
  }

  // Live shim daemons of this sandbox: our binary serving our grpc address, not an action.
  // A daemon still inside execve is not listed (no cmdline yet): find it through its
  // socket first (serving_daemon).
  std::vector<pid_t> daemons() const {
    std::vector<pid_t> pids;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (!std::all_of(name.begin(), name.end(), ::isdigit)) continue;
      auto argv = split_nul(slurp(entry.path().string() + "/cmdline"));
      if (argv.empty() || argv[0] != binary_) continue;
      if (std::find(argv.begin(), argv.end(), grpc_) == argv.end()) continue;
      if (std::find(argv.begin(), argv.end(), "start") != argv.end()) continue;
      if (std::find(argv.begin(), argv.end(), "delete") != argv.end()) continue;
      if (slurp(entry.path().string() + "/stat").find(") Z ") != std::string::npos) continue;
      pids.push_back(std::stoi(name));
    }
    return pids;
  }

  // What the daemons wrote to their `log` FIFOs so far (for failure messages).
  std::string logs() const {
    std::string text;
    for (int fd : log_fds_) {
      char buffer[4096];
      for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
    }
    return text;
  }

 private:
  TempDir dir_;
  std::string grpc_, ttrpc_, socket_dir_, binary_;
  std::vector<std::string> sockets_;
  std::vector<int> log_fds_;
};

// SIGTERM, then the exit code once it is gone (we are its subreaper).
int terminate_daemon(pid_t pid) {
  REQUIRE(::kill(pid, SIGTERM) == 0);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(5ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool is_socket_with_mode(const std::string& path, mode_t mode) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == mode;
}

// Task API Connect over the shim socket: the daemon answers with its own pid.
std::uint32_t connect_shim_pid(const std::string& address, const std::string& service) {
  shim::test::SyncClient client(address);
  containerd::task::v2::ConnectRequest request;
  request.set_id("t1");
  auto result = client.call(service, "Connect", request.SerializeAsString());
  INFO(result.status.to_string());
  REQUIRE(result.status.ok());
  containerd::task::v2::ConnectResponse response;
  REQUIRE(response.ParseFromString(result.payload));
  return response.shim_pid();
}

// A child chrooted into `rootfs` (as the example runs a container's process), idle
// until killed. Returns once /proc shows it inside the rootfs.
pid_t chrooted_child(const std::string& rootfs) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::chroot(rootfs.c_str()) != 0 || ::chdir("/") != 0) ::_exit(1);
    for (;;) ::pause();
  }
  const std::string root_link = fmt::format("/proc/{}/root", pid);
  for (int i = 0; i < 200 && link_target(root_link) != rootfs; ++i) {
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(link_target(root_link) == rootfs);
  return pid;
}

// The daemon behind `address`, once it serves. `start` returns as soon as the daemon's
// exec began, so a first call is what waits for it (containerd's first call queues in
// the listen backlog the same way); the Connect answer names the serving pid.
pid_t serving_daemon(const std::string& address) {
  return static_cast<pid_t>(connect_shim_pid(address, "containerd.task.v2.Task"));
}

// Everything a freshly started daemon must look like (containerd pkg/shim/shim.go and the Go runc shim).
void check_daemon_attributes(const ShimSandbox& sb, pid_t daemon, const ShimRun& start,
                             const std::string& bundle, const std::string& group, bool debug) {
  INFO("daemon " << daemon << "\nlogs:\n" << sb.logs());
  CHECK(::getpgid(daemon) == daemon);            // its own process group ...
  CHECK(::getpgid(daemon) != start.pid);         // ... not the one of `start`
  CHECK(link_target(fmt::format("/proc/{}/cwd", daemon)) == bundle);
  CHECK(link_target(fmt::format("/proc/{}/fd/0", daemon)) == "/dev/null");
  CHECK(link_target(fmt::format("/proc/{}/fd/1", daemon)) == "/dev/null");
  CHECK(link_target(fmt::format("/proc/{}/fd/2", daemon)) == bundle + "/log");
  CHECK(read_int_file(fmt::format("/proc/{}/oom_score_adj", daemon)) ==
        std::min(read_int_file("/proc/self/oom_score_adj") + 1, 1000));
  std::vector<std::string> argv = {sb.binary(), "-namespace", kNamespace, "-id",
                                   group,       "-address",   sb.grpc()};
  if (debug) argv.push_back("-debug");
  CHECK(split_nul(slurp(fmt::format("/proc/{}/cmdline", daemon))) == argv);
  auto env = split_nul(slurp(fmt::format("/proc/{}/environ", daemon)));
  CHECK(std::count(env.begin(), env.end(), "TTRPC_ADDRESS=" + sb.ttrpc()) == 1);
}

void check_clean_start(const ShimRun& run) {
  INFO(run.describe());
  CHECK(run.exit_code == 0);
  CHECK(run.err.empty());
  CHECK(run.output_eof);   // the daemon holds no end of containerd's pipe
  CHECK(run.took < 3s);    // and `start` did not wait for it
}

}  // namespace

TEST_CASE("shim-example start as containerd 1.6 runs it: plain address, detached daemon",
          "[shim-protocol]") {
  SubreaperScope subreaper;
  ShimSandbox sb;
  const std::string bundle = sb.make_bundle("t1");
  const std::string socket = sb.default_socket_path("t1");
  const std::string address = "unix://" + socket;

  ShimRun run = sb.start(Caller::k1_6, "t1", bundle);
  check_clean_start(run);
  CHECK(run.out == address);  // exactly: no newline, nothing else
  CHECK(slurp(bundle + "/address") == address);
  CHECK(is_socket_with_mode(socket, 0600));

  const pid_t daemon = serving_daemon(address);
  REQUIRE(sb.daemons() == std::vector<pid_t>{daemon});
  check_daemon_attributes(sb, daemon, run, bundle, "t1", false);
  CHECK(connect_shim_pid(address, "containerd.task.v3.Task") == static_cast<std::uint32_t>(daemon));

  SECTION("a second start for the same group reuses the daemon") {
    const std::string bundle2 = sb.make_bundle("t2", {{"io.containerd.runc.v2.group", "t1"}});
    ShimRun second = sb.start(Caller::k1_6, "t2", bundle2);
    check_clean_start(second);
    CHECK(second.out == address);
    CHECK(slurp(bundle2 + "/address") == address);
    CHECK(sb.daemons() == std::vector<pid_t>{daemon});
    CHECK(ShimSandbox::processes_with_cwd_under(bundle2).empty());  // none being spawned
  }
  SECTION("garbage on stdin does not fail start") {
    const std::string bundle2 = sb.make_bundle("t3");
    static constexpr char kGarbage[] = "\x0a\xff\xff\xff\xff\x0f junk \x80\x00\x12";
    ShimRun garbage =
        sb.start(Caller::k1_7, "t3", bundle2, std::string(kGarbage, sizeof kGarbage - 1));
    check_clean_start(garbage);
    CHECK(garbage.out == "unix://" + sb.default_socket_path("t3"));
    pid_t second = serving_daemon(garbage.out);
    CHECK(second != daemon);
    CHECK(sb.daemons().size() == 2);
  }

  CHECK(terminate_daemon(daemon) == 0);
  CHECK_FALSE(fs::exists(socket));
  for (pid_t other : sb.daemons()) CHECK(terminate_daemon(other) == 0);
}

TEST_CASE("shim-example start as containerd 1.7 runs it: legacy Any, group annotation, -debug",
          "[shim-protocol]") {
  SubreaperScope subreaper;
  ShimSandbox sb;
  // CRI's pod annotation names the group: the socket is the pod's, not the task's.
  const std::string bundle = sb.make_bundle("app1", {{"io.kubernetes.cri.sandbox-id", "pod1"}});
  const std::string socket = sb.default_socket_path("pod1");

  ShimRun run = sb.start(Caller::k1_7, "app1", bundle, std::nullopt, /*debug=*/true);
  check_clean_start(run);
  CHECK(run.out == "unix://" + socket);  // 1.7 rejects JSON version 3: plain it is
  CHECK(slurp(bundle + "/address") == run.out);
  CHECK(is_socket_with_mode(socket, 0600));
  const pid_t daemon = serving_daemon(run.out);
  REQUIRE(sb.daemons() == std::vector<pid_t>{daemon});
  check_daemon_attributes(sb, daemon, run, bundle, "pod1", true);

  CHECK(terminate_daemon(daemon) == 0);
  CHECK_FALSE(fs::exists(socket));
}

TEST_CASE("shim-example start as containerd 2.3 runs it: BootstrapParams in, BootstrapResult out",
          "[shim-protocol]") {
  SubreaperScope subreaper;
  ShimSandbox sb;
  REQUIRE(sb.socket_dir().size() <= 42);  // containerd 2.3's own limit for socket_dir
  const std::string bundle = sb.make_bundle("t1");
  const std::string socket = sb.socket_path("t1", sb.socket_dir());

  SECTION("a fresh socket dir") {}
  SECTION("a stale socket file of a dead shim is replaced") {
    fs::create_directories(sb.socket_dir());
    ::chmod(sb.socket_dir().c_str(), 0700);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);  // the file stays, nobody listens
    REQUIRE(fs::is_socket(socket));
  }

  ShimRun run = sb.start(Caller::k2_3, "t1", bundle, std::nullopt, /*debug=*/true);
  check_clean_start(run);
  bootstrap_v1::BootstrapResult result;
  REQUIRE(result.ParseFromString(run.out));
  CHECK(result.version() == 3);
  CHECK(result.protocol() == "ttrpc");
  CHECK(result.address() == "unix://" + socket);
  CHECK(result.SerializeAsString() == run.out);  // nothing but the message
  CHECK(slurp(bundle + "/address") == result.address());

  struct stat dir_stat {};
  REQUIRE(::stat(sb.socket_dir().c_str(), &dir_stat) == 0);
  CHECK((dir_stat.st_mode & 07777) == 0700);
  CHECK(is_socket_with_mode(socket, 0600));

  const pid_t daemon = serving_daemon(result.address());
  REQUIRE(sb.daemons() == std::vector<pid_t>{daemon});
  // LOG_LEVEL_DEBUG asks for -debug.
  check_daemon_attributes(sb, daemon, run, bundle, "t1", true);
  CHECK(connect_shim_pid(result.address(), "containerd.task.v3.Task") ==
        static_cast<std::uint32_t>(daemon));

  CHECK(terminate_daemon(daemon) == 0);
  CHECK_FALSE(fs::exists(socket));
}

TEST_CASE("shim-example -v and -info", "[shim-protocol]") {
  ShimSandbox sb;
  ShimRun version = run_shim({sb.binary(), "-v"}, clean_env({}), "", sb.dir());
  INFO(version.describe());
  CHECK(version.exit_code == 0);
  CHECK(version.err.empty());
  CHECK(version.out.starts_with(sb.binary() + ":\n  Version:  "));
  CHECK(version.out.find("\n  libshim:  ") != std::string::npos);

  ShimRun info = run_shim({sb.binary(), "-info"}, clean_env({}), "", sb.dir());
  INFO(info.describe());
  CHECK(info.exit_code == 0);
  CHECK(info.err.empty());
  containerd::types::RuntimeInfo runtime;
  REQUIRE(runtime.ParseFromString(info.out));
  CHECK(runtime.SerializeAsString() == info.out);
  CHECK(runtime.name() == "io.containerd.example.v1");
  CHECK_FALSE(runtime.version().version().empty());
  CHECK_FALSE(runtime.has_options());

  // 2.x sends the runtime options Any on stdin; the Go shim echoes it back.
  auto options = ShimSandbox::runc_options_any();
  ShimRun echoed = run_shim({sb.binary(), "-info"}, clean_env({}), options.SerializeAsString(),
                            sb.dir());
  INFO(echoed.describe());
  CHECK(echoed.exit_code == 0);
  REQUIRE(runtime.ParseFromString(echoed.out));
  CHECK(runtime.options().type_url() == "containerd.runc.v1.Options");
  CHECK(runtime.options().value() == options.value());
}

TEST_CASE("shim-example delete prints only a DeleteResponse", "[shim-protocol]") {
  ShimSandbox sb;
  const std::string bundle = sb.make_bundle("t1");
  auto delete_argv = [&](bool with_namespace) {
    std::vector<std::string> argv = {sb.binary()};
    if (with_namespace) argv.insert(argv.end(), {"-namespace", kNamespace});
    argv.insert(argv.end(), {"-address", sb.grpc(), "-publish-binary", kContainerdBinary, "-id",
                             "t1", "-bundle", bundle, "delete"});
    return argv;
  };
  auto now_seconds = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };

  SECTION("no init.pid: pid -1 as uint32, 137") {
    ShimRun run = run_shim(delete_argv(true), sb.env_for(Caller::k1_6), "", bundle);
    INFO(run.describe());
    CHECK(run.exit_code == 0);
    containerd::task::v2::DeleteResponse response;
    REQUIRE(response.ParseFromString(run.out));
    CHECK(response.SerializeAsString() == run.out);
    CHECK(response.pid() == 4294967295u);
    CHECK(response.exit_status() == 137);
    CHECK(std::abs(response.exited_at().seconds() - now_seconds()) < 60);
  }
  SECTION("a leftover init process (chrooted in the rootfs) is killed") {
    pid_t leftover = chrooted_child(bundle + "/rootfs");
    std::ofstream(bundle + "/init.pid") << leftover;
    ShimRun run = run_shim(delete_argv(true), sb.env_for(Caller::k1_7), "", bundle);
    INFO(run.describe());
    int status = 0;
    REQUIRE(::waitpid(leftover, &status, 0) == leftover);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    CHECK(run.exit_code == 0);
    containerd::task::v2::DeleteResponse response;
    REQUIRE(response.ParseFromString(run.out));
    CHECK(response.SerializeAsString() == run.out);
    CHECK(response.pid() == static_cast<std::uint32_t>(leftover));
    CHECK(response.exit_status() == 137);
  }
  SECTION("a stale init.pid naming someone else's process kills nothing") {
    // containerd runs `delete` after every task removal: init.pid then names a process
    // that is gone, and its pid may belong to an unrelated process by now.
    pid_t stranger = ::fork();
    REQUIRE(stranger >= 0);
    if (stranger == 0) {
      ::pause();
      ::_exit(0);
    }
    std::ofstream(bundle + "/init.pid") << stranger;
    ShimRun run = run_shim(delete_argv(true), sb.env_for(Caller::k1_6), "", bundle);
    INFO(run.describe());
    CHECK(run.exit_code == 0);
    std::this_thread::sleep_for(50ms);
    CHECK(::waitpid(stranger, nullptr, WNOHANG) == 0);  // still running
    ::kill(stranger, SIGKILL);
    ::waitpid(stranger, nullptr, 0);
    containerd::task::v2::DeleteResponse response;
    REQUIRE(response.ParseFromString(run.out));
    CHECK(response.exit_status() == 137);
  }
  SECTION("no namespace: an error on stderr only, exit 1") {
    ShimRun run = run_shim(delete_argv(false), clean_env({}), "", bundle);
    INFO(run.describe());
    CHECK(run.exit_code == 1);
    CHECK(run.out.empty());
    CHECK(run.err == "io.containerd.example.v1: shim namespace cannot be empty");
  }
}

namespace {

// containerd's events endpoint (TTRPC_ADDRESS) for a daemon run without containerd: it
// records the topics the daemon forwards.
class EventsSink {
 public:
  explicit EventsSink(const std::string& path) {
    shim::ttrpc::Router router;
    router.add("containerd.services.events.ttrpc.v1.Events", "Forward",
               [this](const shim::ttrpc::CallInfo& call, std::string_view payload,
                      shim::ttrpc::Responder responder) {
                 containerd::services::events::ttrpc::v1::ForwardRequest request;
                 request.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
                 std::lock_guard lock(mutex_);
                 topics_.push_back(request.envelope().topic() + " " +
                                   request.envelope().event().type_url() + " " +
                                   std::string(call.metadata_value("containerd-namespace-ttrpc")));
                 responder.reply("");
               });
    server_ = std::make_unique<shim::ttrpc::TtrpcServer>(io_.executor(), std::move(router));
    REQUIRE(server_->serve_path(path).ok());
  }
  ~EventsSink() {
    server_.reset();
    io_.drain();
  }
  std::vector<std::string> topics() const {
    std::lock_guard lock(mutex_);
    return topics_;
  }

 private:
  shim::test::IoThread io_;
  std::unique_ptr<shim::ttrpc::TtrpcServer> server_;
  mutable std::mutex mutex_;
  std::vector<std::string> topics_;
};

template <class Response>
Response task_call(shim::test::SyncClient& client, const std::string& method,
                   const google::protobuf::MessageLite& request) {
  auto result = client.call("containerd.task.v2.Task", method, request.SerializeAsString());
  INFO(method << ": " << result.status.to_string());
  REQUIRE(result.status.ok());
  Response response;
  REQUIRE(response.ParseFromString(result.payload));
  return response;
}

// What a FIFO holds right now (O_NONBLOCK: no waiting for a writer).
// Reads what the shim copies into a FIFO once it sees our reader, up to its EOF (the
// shim writes only to a FIFO that has a reader, and keeps the output until then).
std::string drain_fifo(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::string text;
  char buffer[4096];
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 && !text.empty()) {
      break;  // the shim's copy closed its end after the process's output
    } else {
      std::this_thread::sleep_for(5ms);  // no writer yet (EOF) or nothing yet (EAGAIN)
    }
  }
  ::close(fd);
  return text;
}

}  // namespace

TEST_CASE("shim-example daemon: output written before the client opens its FIFO end is kept",
          "[shim-protocol]") {
  // ctr opens its ends of the stdio FIFOs asynchronously: a fast process may write before
  // ctr has a reader. That must neither kill it (SIGPIPE) nor lose the output.
  SubreaperScope subreaper;
  ShimSandbox sb;
  EventsSink events(sb.ttrpc());
  const std::string bundle =
      sb.make_bundle("t1", {}, {"/bin/sh", "-c", "echo hi; echo oops >&2"});
  shim::test::make_busybox_rootfs(bundle + "/rootfs");
  const std::string out_fifo = sb.dir() + "/t1-stdout";
  const std::string err_fifo = sb.dir() + "/t1-stderr";
  REQUIRE(::mkfifo(out_fifo.c_str(), 0600) == 0);
  REQUIRE(::mkfifo(err_fifo.c_str(), 0600) == 0);

  ShimRun run = sb.start(Caller::k1_6, "t1", bundle);
  check_clean_start(run);
  const pid_t daemon = serving_daemon(run.out);
  {
    shim::test::SyncClient client(run.out);
    containerd::task::v2::CreateTaskRequest create;
    create.set_id("t1");
    create.set_bundle(bundle);
    create.set_stdout(out_fifo);
    create.set_stderr(err_fifo);
    task_call<containerd::task::v2::CreateTaskResponse>(client, "Create", create);
    containerd::task::v2::StartRequest start;
    start.set_id("t1");
    auto started = task_call<containerd::task::v2::StartResponse>(client, "Start", start);
    CHECK(started.pid() > 0);
    containerd::task::v2::WaitRequest wait;
    wait.set_id("t1");
    auto waited = task_call<containerd::task::v2::WaitResponse>(client, "Wait", wait);
    CHECK(waited.exit_status() == 0);  // 141 = SIGPIPE: nobody held a reader
    CHECK(drain_fifo(out_fifo) == "hi\n");
    CHECK(drain_fifo(err_fifo) == "oops\n");
    containerd::task::v2::DeleteRequest remove;
    remove.set_id("t1");
    auto deleted = task_call<containerd::task::v2::DeleteResponse>(client, "Delete", remove);
    CHECK(deleted.exit_status() == 0);
    containerd::task::v2::ShutdownRequest shutdown;
    shutdown.set_id("t1");
    task_call<shim::pb::Empty>(client, "Shutdown", shutdown);
  }
  // Shutdown: the daemon flushes its events, removes its socket and exits 0.
  int status = 0;
  for (int i = 0; i < 500 && ::waitpid(daemon, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(run.out.substr(7)));
  const std::string ns = kNamespace;
  CHECK(events.topics() ==
        std::vector<std::string>{"/tasks/create containerd.events.TaskCreate " + ns,
                                 "/tasks/start containerd.events.TaskStart " + ns,
                                 "/tasks/exit containerd.events.TaskExit " + ns,
                                 "/tasks/delete containerd.events.TaskDelete " + ns});
}

TEST_CASE("shim-example daemon: an OCI process whose args are not strings fails Create cleanly",
          "[shim-protocol]") {
  // Found reading config.json handling for tests/fuzz: boost::json::value_to threw on a
  // number in "args", on the pool, where the exception was swallowed with the reply.
  SubreaperScope subreaper;
  ShimSandbox sb;
  EventsSink events(sb.ttrpc());
  const std::string bundle = sb.make_bundle("t1");
  std::ofstream(bundle + "/config.json")
      << R"({"ociVersion":"1.0.2","process":{"args":["/bin/true",1],"env":[null],"cwd":"/"},)"
         R"("root":{"path":"rootfs"}})";
  ShimRun run = sb.start(Caller::k1_6, "t1", bundle);
  check_clean_start(run);
  const pid_t daemon = serving_daemon(run.out);
  {
    shim::test::SyncClient client(run.out);
    containerd::task::v2::CreateTaskRequest create;
    create.set_id("t1");
    create.set_bundle(bundle);
    auto created = client.call("containerd.task.v2.Task", "Create", create.SerializeAsString());
    CHECK(created.status.code() == shim::Code::kInvalidArgument);
    CHECK(created.status.message() == "the OCI process args must be strings: invalid argument");
    // The shim is still sound: the failed Create left no task behind.
    containerd::task::v2::StateRequest state;
    state.set_id("t1");
    auto listed = client.call("containerd.task.v2.Task", "State", state.SerializeAsString());
    CHECK(listed.status.code() == shim::Code::kNotFound);
    containerd::task::v2::ShutdownRequest shutdown;
    shutdown.set_id("t1");
    task_call<shim::pb::Empty>(client, "Shutdown", shutdown);
  }
  int status = 0;
  for (int i = 0; i < 500 && ::waitpid(daemon, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
