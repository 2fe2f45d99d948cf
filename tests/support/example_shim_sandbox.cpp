#include "support/example_shim_sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "shim/pb/containerd/bootstrap.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/runc/runc_options.pb.h"
#include "support/containerd_fixture.h"
#include "support/sanitized_shims.h"
#include "support/ttrpc_harness.h"

extern char** environ;

namespace shim::test {

namespace fs = std::filesystem;
namespace bootstrap_v1 = containerd::runtime::bootstrap::v1;
using namespace std::chrono_literals;

namespace {

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

}  // namespace

const std::string& example_shim_binary() {
  static const std::string path = shim_build_dir() + "/shim-example/containerd-shim-example-v1";
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string ShimRun::describe() const {
  return fmt::format("exit {}, eof {}, {} ms; stdout: {:?}; stderr: {:?}", exit_code, output_eof,
                     took.count(), out, err);
}

ShimRun run_shim(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 const std::string& stdin_data, const std::string& cwd,
                 std::chrono::milliseconds timeout) {
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

std::vector<std::string> clean_env(const std::vector<std::string>& extra) {
  static const char* const kContainerdVars[] = {
      "TTRPC_ADDRESS=", "GRPC_ADDRESS=", "NAMESPACE=",    "MAX_SHIM_VERSION=",
      "GOMAXPROCS=",    "SCHED_CORE=",   "NOTIFY_SOCKET="};
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

SubreaperScope::SubreaperScope() { REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0); }
SubreaperScope::~SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }

ShimSandbox::ShimSandbox() : ShimSandbox(example_shim_binary()) {}

ShimSandbox::ShimSandbox(const std::string& binary)
    : dir_("sp-"),
      grpc_(dir_.sub("c.sock")),
      ttrpc_(grpc_ + ".ttrpc"),
      socket_dir_(dir_.sub("s")),
      binary_(fs::canonical(binary).string()) {}

ShimSandbox::~ShimSandbox() {
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

std::string ShimSandbox::make_bundle(
    const std::string& id, const std::vector<std::pair<std::string, std::string>>& annotations,
    const std::vector<std::string>& args) {
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
  make_log_fifo(bundle);
  return bundle;
}

std::string ShimSandbox::make_bundle_without_spec(const std::string& id) {
  std::string bundle = dir_.sub(id);
  fs::create_directories(bundle);
  make_log_fifo(bundle);
  return bundle;
}

void ShimSandbox::make_log_fifo(const std::string& bundle) {
  std::string fifo = bundle + "/log";
  REQUIRE(::mkfifo(fifo.c_str(), 0700) == 0);
  int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(fd >= 0);
  log_fds_.push_back(fd);
}

std::string ShimSandbox::socket_path(const std::string& group, const std::string& socket_dir) {
  std::string path = shim::test::go_shim_socket_path(grpc_, kSandboxNamespace, group);
  path = socket_dir + "/" + fs::path(path).filename().string();
  sockets_.push_back(path);
  return path;
}

ShimRun ShimSandbox::start(Caller caller, const std::string& id, const std::string& bundle,
                           std::optional<std::string> stdin_data, bool debug) {
  std::vector<std::string> argv = {binary_, "-namespace",      kSandboxNamespace,  "-address",
                                   grpc_,   "-publish-binary", kSandboxContainerd, "-id",
                                   id};
  if (caller == Caller::k2_3) argv.insert(argv.end(), {"-bundle", bundle});
  if (debug) argv.push_back("-debug");
  argv.push_back("start");
  return run_shim(argv, env_for(caller), stdin_data.value_or(default_stdin(caller, id, debug)),
                  bundle);
}

std::vector<std::string> ShimSandbox::env_for(Caller caller) const {
  std::vector<std::string> extra = {"GOMAXPROCS=2"};
  if (caller != Caller::k1_6) extra.push_back("MAX_SHIM_VERSION=2");
  extra.push_back("TTRPC_ADDRESS=" + ttrpc_);
  if (caller != Caller::k1_6) {
    extra.push_back("GRPC_ADDRESS=" + grpc_);
    extra.push_back(fmt::format("NAMESPACE={}", kSandboxNamespace));
  }
  return clean_env(extra);
}

std::string ShimSandbox::default_stdin(Caller caller, const std::string& id, bool debug) const {
  if (caller == Caller::k1_6) return {};  // ctr with a non-runc runtime sends no options
  if (caller == Caller::k1_7) return runc_options_any().SerializeAsString();
  bootstrap_v1::BootstrapParams params;
  params.set_instance_id(id);
  params.set_namespace_(kSandboxNamespace);
  params.set_log_level(debug ? bootstrap_v1::LOG_LEVEL_DEBUG : bootstrap_v1::LOG_LEVEL_INFO);
  params.set_containerd_version("v2.3.0");
  params.set_containerd_ttrpc_address(ttrpc_);
  params.set_containerd_grpc_address(grpc_);
  params.set_containerd_binary(kSandboxContainerd);
  *params.add_extensions()->mutable_value() = runc_options_any();
  params.set_socket_dir(socket_dir_);
  return params.SerializeAsString();
}

shim::pb::Any ShimSandbox::runc_options_any() {
  containerd::runc::v1::Options options;
  options.set_root("/run/containerd/runc");
  shim::pb::Any any;
  any.set_type_url("containerd.runc.v1.Options");
  any.set_value(options.SerializeAsString());
  return any;
}

std::vector<pid_t> ShimSandbox::processes_with_cwd_under(const std::string& dir) {
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

std::vector<pid_t> ShimSandbox::daemons() const {
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

std::string ShimSandbox::logs() const {
  std::string text;
  for (int fd : log_fds_) {
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  }
  return text;
}

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

std::uint32_t connect_shim_pid(const std::string& address, const std::string& service) {
  shim::test::SyncClient client(address);
  return connect_shim_pid(client, service);
}

std::uint32_t connect_shim_pid(SyncClient& client, const std::string& service) {
  containerd::task::v2::ConnectRequest request;
  request.set_id("t1");
  auto result = client.call(service, "Connect", request.SerializeAsString());
  INFO(result.status.to_string());
  REQUIRE(result.status.ok());
  containerd::task::v2::ConnectResponse response;
  REQUIRE(response.ParseFromString(result.payload));
  return response.shim_pid();
}

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

pid_t serving_daemon(const std::string& address) {
  return static_cast<pid_t>(connect_shim_pid(address, "containerd.task.v2.Task"));
}

void check_daemon_attributes(const ShimSandbox& sb, pid_t daemon, const ShimRun& start,
                             const std::string& bundle, const std::string& group, bool debug) {
  INFO("daemon " << daemon << "\nlogs:\n" << sb.logs());
  CHECK(::getpgid(daemon) == daemon);     // its own process group ...
  CHECK(::getpgid(daemon) != start.pid);  // ... not the one of `start`
  CHECK(link_target(fmt::format("/proc/{}/cwd", daemon)) == bundle);
  CHECK(link_target(fmt::format("/proc/{}/fd/0", daemon)) == "/dev/null");
  CHECK(link_target(fmt::format("/proc/{}/fd/1", daemon)) == "/dev/null");
  CHECK(link_target(fmt::format("/proc/{}/fd/2", daemon)) == bundle + "/log");
  CHECK(read_int_file(fmt::format("/proc/{}/oom_score_adj", daemon)) ==
        std::min(read_int_file("/proc/self/oom_score_adj") + 1, 1000));
  std::vector<std::string> argv = {sb.binary(), "-namespace", kSandboxNamespace, "-id",
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
  CHECK(run.output_eof);  // the daemon holds no end of containerd's pipe
  CHECK(run.took < 3s);   // and `start` did not wait for it
}

}  // namespace shim::test
