// Running the built shim-example binary as containerd 1.6, 1.7 and 2.3 run it
// (runtime/v2/binary.go, core/runtime/v2/binary.go), without containerd: a sandbox dir
// with a fake containerd context (addresses, bundles with their `log` FIFO, a socket dir),
// `start` runs with each caller's argv, env and stdin, and checks of the daemon it leaves.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shim/pb/any.pb.h"
#include "support/temp_dir.h"

namespace shim::test {

// The namespace and containerd binary the sandbox's `start` runs name.
inline constexpr const char* kSandboxNamespace = "spns";
inline constexpr const char* kSandboxContainerd = "/usr/bin/containerd";

// The built shim-example binary (shim_build_dir()/shim-example/containerd-shim-example-v1).
const std::string& example_shim_binary();

// The whole file at `path` ("" if it cannot be read).
std::string slurp(const std::string& path);

// What one run of the shim binary produced. stdout and stderr are kept apart (containerd
// merges them, so "stderr empty" is what keeps the answer clean).
struct ShimRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  bool output_eof = false;  // both pipes reached EOF: nobody else holds them
  std::chrono::milliseconds took{0};
  pid_t pid = -1;

  std::string describe() const;
};

// fork+exec `argv` with exactly `env`, `stdin_data` on a pipe, cwd and a new process
// group as containerd does; waits for EOF on stdout/stderr (not just for the exit), as
// containerd's CombinedOutput does. Gives up after `timeout`.
ShimRun run_shim(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 const std::string& stdin_data, const std::string& cwd,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Our environment without anything containerd sets for a shim, plus `extra`.
std::vector<std::string> clean_env(const std::vector<std::string>& extra);

enum class Caller { k1_6, k1_7, k2_3 };

// While alive, orphans (the daemons, once their `start` exits) become our children, so
// their exit status can be collected.
class SubreaperScope {
 public:
  SubreaperScope();
  ~SubreaperScope();
};

// A temp dir with a fake containerd context: addresses, bundles, a short socket dir.
class ShimSandbox {
 public:
  ShimSandbox();
  // Runs `binary` (a test shim of tests/shims/) instead of the example shim.
  explicit ShimSandbox(const std::string& binary);
  // Daemons a failed test left behind: killed, and reaped when they are our children.
  // Found by cwd too: a daemon still inside execve has no cmdline yet.
  ~ShimSandbox();

  const std::string& dir() const { return dir_.path(); }
  const std::string& grpc() const { return grpc_; }
  const std::string& ttrpc() const { return ttrpc_; }
  const std::string& socket_dir() const { return socket_dir_; }
  const std::string& binary() const { return binary_; }

  // <dir>/<id> with config.json (annotations as given) and the `log` FIFO containerd
  // creates and keeps open.
  std::string make_bundle(const std::string& id,
                          const std::vector<std::pair<std::string, std::string>>& annotations = {},
                          const std::vector<std::string>& args = {"/bin/true"});

  // <dir>/<id> with only the `log` FIFO: the bundle containerd 2.x's shim-mode sandbox
  // controller makes for a sandbox without a spec (CRI's pods).
  std::string make_bundle_without_spec(const std::string& id);

  // The socket the Go shim and libshim compute for `group` in `socket_dir`.
  std::string socket_path(const std::string& group, const std::string& socket_dir);
  std::string default_socket_path(const std::string& group) {
    return socket_path(group, "/run/containerd/s");
  }

  // `start` as `caller` runs it, with `stdin_data` (nullopt: what that caller sends).
  ShimRun start(Caller caller, const std::string& id, const std::string& bundle,
                std::optional<std::string> stdin_data = std::nullopt, bool debug = false);

  std::vector<std::string> env_for(Caller caller) const;
  std::string default_stdin(Caller caller, const std::string& id, bool debug) const;
  static shim::pb::Any runc_options_any();

  // Processes (other than us) whose cwd is `dir` or below: every daemon of this sandbox
  // from the moment it is spawned (its cwd is set before the exec).
  static std::vector<pid_t> processes_with_cwd_under(const std::string& dir);

  // Live shim daemons of this sandbox: our binary serving our grpc address, not an action.
  // A daemon still inside execve is not listed (no cmdline yet): find it through its
  // socket first (serving_daemon).
  std::vector<pid_t> daemons() const;

  // What the daemons wrote to their `log` FIFOs so far (for failure messages).
  std::string logs() const;

 private:
  TempDir dir_;
  std::string grpc_, ttrpc_, socket_dir_, binary_;
  // Creates <bundle>/log as containerd does, and keeps it open.
  void make_log_fifo(const std::string& bundle);

  std::vector<std::string> sockets_;
  std::vector<int> log_fds_;
};

// SIGTERM, then the exit code once it is gone (we are its subreaper).
int terminate_daemon(pid_t pid);

bool is_socket_with_mode(const std::string& path, mode_t mode);

// Task API Connect over the shim socket: the daemon answers with its own pid.
class SyncClient;  // support/ttrpc_harness.h
std::uint32_t connect_shim_pid(const std::string& address, const std::string& service);
// The same over a connection the caller keeps (e.g. one opened before a live upgrade).
std::uint32_t connect_shim_pid(SyncClient& client, const std::string& service);

// A child chrooted into `rootfs` (as the example runs a container's process), idle
// until killed. Returns once /proc shows it inside the rootfs.
pid_t chrooted_child(const std::string& rootfs);

// The daemon behind `address`, once it serves. `start` returns as soon as the daemon's
// exec began, so a first call is what waits for it (containerd's first call queues in
// the listen backlog the same way); the Connect answer names the serving pid.
pid_t serving_daemon(const std::string& address);

// Everything a freshly started daemon must look like (containerd pkg/shim/shim.go and the
// Go runc shim).
void check_daemon_attributes(const ShimSandbox& sb, pid_t daemon, const ShimRun& start,
                             const std::string& bundle, const std::string& group, bool debug);

// `start` exited 0 at once, with nothing on stderr and its output pipes closed.
void check_clean_start(const ShimRun& run);

}  // namespace shim::test
