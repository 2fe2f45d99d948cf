// PrivateContainerd: a containerd daemon that lives entirely in a temp dir, for
// integration tests. Never touches the system daemon's socket, root or state.
//
// Layout of dir():
//   c.sock, c.sock.ttrpc   grpc and ttrpc sockets (short paths: sun_path is 108 bytes)
//   config.toml            version 2 (3 on 2.x with `cri`), CRI (unless `cri`) and other
//                          unneeded plugins disabled, debug log
//   containerd.log         containerd's stdout+stderr (shim logs end up here too)
//   root/ state/           containerd root and state
//   runc/ fifo/            for ctr's --runc-root / --fifo-dir (see run_flags())
//   opt/                   the opt plugin's dir (would default to /opt/containerd)
// Shim sockets of the Go runc shim still go to /run/containerd/s (hard-coded there).
//
// Which containerd: $LIBSHIM_CONTAINERD_BIN / $LIBSHIM_CTR_BIN (set by the multi-version
// ctest runs, see tests/README.md), else the system's. $LIBSHIM_CONTAINERD_EXPECT ("1.7")
// makes the constructor fail unless that major.minor runs. End-to-end tests start with
// LIBSHIM_SKIP_WITHOUT_CONTAINERD() so a run whose containerd is missing is skipped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/busybox_rootfs.h"
#include "support/containerd_binaries.h"
#include "support/events_subscriber.h"
#include "support/runtime_binary.h"
#include "support/sanitized_shims.h"
#include "support/skip.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace shim::test {

struct ContainerdOptions {
  // Empty: $LIBSHIM_CONTAINERD_BIN, else /usr/bin/containerd.
  std::string containerd_bin;
  // Empty: $LIBSHIM_CTR_BIN, else `ctr` next to the containerd binary, else /usr/bin/ctr.
  std::string ctr_bin;
  // Empty: "libshim-<random>", unique per fixture (also names the cgroup parent).
  std::string ns;
  // Directories put in front of containerd's PATH (where it looks for shim binaries).
  // The containerd binary's own dir follows them, then $PATH: so containerd runs the Go
  // shim that came with it unless a test puts its own shim first.
  std::vector<std::string> path_prepend;
  // "NAME=value" entries added to containerd's environment, which it passes to the shims
  // it starts (a shim's settings, e.g. LIBSHIM_VM_CHANNEL).
  std::vector<std::string> env;
  // TOML appended to the generated config.toml.
  std::string extra_config;
  // Keep the CRI plugin (on 2.x also the plugins it was split into) and, on 2.x, write
  // config version 3, whose plugin sections extra_config then uses (tests/cri).
  bool cri = false;
  std::chrono::milliseconds start_timeout{30000};
  // Start the daemon in the constructor.
  bool start = true;
};

// Why the containerd and ctr that a fixture with `options` would use cannot run here
// (missing, not executable, or `containerd --version` fails), or why the runtime in
// $LIBSHIM_TEST_RUNC_BINARY cannot, or nullopt when they can.
std::optional<std::string> containerd_unavailable(const ContainerdOptions& options = {});

class PrivateContainerd {
 public:
  // Throws std::runtime_error if containerd is unavailable (the message starts with
  // kSkipMarker, so ctest reports a test that did not check first as skipped) or is not
  // the version in $LIBSHIM_CONTAINERD_EXPECT.
  explicit PrivateContainerd(ContainerdOptions options = {});
  // Kills leftover tasks, removes containers, stops containerd, kills stray shims and
  // container processes, unmounts anything under dir() and removes it.
  ~PrivateContainerd();
  PrivateContainerd(const PrivateContainerd&) = delete;
  PrivateContainerd& operator=(const PrivateContainerd&) = delete;

  // Starts containerd and waits until `ctr version` answers. Throws std::runtime_error
  // with the log tail on failure or timeout.
  void start();
  // SIGTERM, up to 10 s, then SIGKILL.
  void stop();
  // SIGKILL (shims keep running, as after a containerd crash).
  void kill9();
  // stop() if running, then start() on the same root/state.
  void restart();
  bool running();
  pid_t pid() const { return daemon_.pid(); }

  // `ctr --address <sock> -n <ns> args...`.
  CommandResult ctr(const std::vector<std::string>& args,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60),
                    std::string stdin_data = {}) const;
  // Same, but throws std::runtime_error (with output and log tail) unless it exits 0.
  CommandResult ctr_ok(const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  // Runs `ctr events [filters]` and returns once it is subscribed (a probe event was
  // seen), so no later event can be missed. Filters use containerd's syntax, e.g.
  // `topic=="/tasks/exit"`; the probe's `/namespaces/update` lines are let through too.
  std::unique_ptr<EventsSubscriber> subscribe_events(std::vector<std::string> filters = {});

  // Flags for `ctr run`/`ctr task start|exec` keeping ctr's FIFOs (and, for the
  // io.containerd.runc.v2 runtime only, runc's state) inside dir(). With
  // `with_runc_root` (only `ctr run`/`ctr create` take it) and $LIBSHIM_TEST_RUNC_BINARY
  // set, also `--runc-binary <it>` (support/runtime_binary.h).
  std::vector<std::string> run_flags(bool with_runc_root = true) const;

  // Kills (SIGKILL) and removes every task and container in every namespace.
  void cleanup_tasks();

  std::string log_tail(std::size_t lines = 60) const;

  // Sanitized mode (support/sanitized_shims.h): where the shims' sanitizer reports go
  // ("" otherwise), and the reports written so far, taken (removed) so that the
  // destructor does not fail the test for them.
  const std::string& sanitizer_dir() const { return sanitizer_dir_; }
  std::vector<SanitizerReport> take_sanitizer_reports();

  const std::string& dir() const { return dir_.path(); }
  const std::string& ns() const { return ns_; }
  const std::string& grpc_address() const { return grpc_address_; }
  const std::string& ttrpc_address() const { return ttrpc_address_; }
  std::string root_dir() const { return dir_.sub("root"); }
  std::string state_dir() const { return dir_.sub("state"); }
  std::string config_path() const { return dir_.sub("config.toml"); }
  std::string log_path() const { return dir_.sub("containerd.log"); }
  std::string fifo_dir() const { return dir_.sub("fifo"); }
  std::string runc_root() const { return dir_.sub("runc"); }
  // <state>/io.containerd.runtime.v2.task/<ns>/<id>
  std::string bundle_dir(std::string_view id) const;
  // The shim address recorded in the bundle of task `id`: the `address` file (1.6/1.7,
  // written by the shim) or the "address" of `bootstrap.json` (2.x, written by
  // containerd). Empty when neither is there.
  std::string shim_address(std::string_view id) const;
  const std::string& containerd_bin() const { return containerd_bin_; }
  const std::string& ctr_bin() const { return ctr_bin_; }
  const ContainerdVersion& version() const { return version_; }

 private:
  void write_config() const;
  std::string daemon_path() const;
  void kill_strays();
  void remove_cgroups();
  void unmount_all();
  void fail_on_sanitizer_reports();

  ContainerdOptions options_;
  TempDir dir_;
  std::string ns_;
  std::string grpc_address_;
  std::string ttrpc_address_;
  std::string containerd_bin_;
  std::string ctr_bin_;
  ContainerdVersion version_;
  ChildProcess daemon_;
  int subscriber_count_ = 0;
  std::string sanitizer_dir_;
};

// The socket the 1.6-2.2 Go runc shim (and `ctr shim`) uses for a task:
// /run/containerd/s/<hex sha256 of "<grpc address>/<ns>/<id>">.
std::string go_shim_socket_path(std::string_view grpc_address, std::string_view ns,
                                std::string_view id);
// The pprof socket the 2.x Go runc shim also listens on when started with -debug (1.6
// and 1.7 have none): /run/containerd/s/<hex sha256 of "<grpc address>/<ns>/<id>/debug">.
std::string go_shim_debug_socket_path(std::string_view grpc_address, std::string_view ns,
                                      std::string_view id);

}  // namespace shim::test

// First statement of an end-to-end TEST_CASE: skips it (WARN + return; ctest: Skipped)
// when the containerd under test is not there, e.g. a 1.7/2.1 run on a machine where
// cmake/fetch-containerd.sh could not fetch it.
#define LIBSHIM_SKIP_WITHOUT_CONTAINERD()                                    \
  do {                                                                       \
    if (auto libshim_unavailable = ::shim::test::containerd_unavailable()) { \
      LIBSHIM_SKIP(*libshim_unavailable);                                    \
    }                                                                        \
  } while (false)
