// CliCommandLine: the argv of every command containerd's Go runc shim runs of a
// runc-compatible OCI runtime CLI (runc, crun, runsc, youki), flag for flag as go-runc
// builds them (github.com/containerd/go-runc runc.go). Pure: nothing here runs anything,
// so the command lines are unit-tested against the Go ones; CliClient
// (shim/oci/cli_client.h) runs them. Any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shim::oci {

inline constexpr std::string_view kDefaultCliBinary = "runc";
inline constexpr std::string_view kDefaultCliRoot = "/run/containerd/runc";

// Which runtime binary, and where it keeps one container's state and log.
struct CliConfig {
  std::string binary;      // Options.binary_name; empty: "runc" (looked up on PATH)
  std::string root;        // Options.root; empty: kDefaultCliRoot
  std::string ns;  // containerd namespace: the state dir is <root>/<namespace>
  std::string bundle;      // runc logs to <bundle>/log.json
  bool systemd_cgroup = false;  // Options.systemd_cgroup: --systemd-cgroup
  // Options.criu_path: the 1.6 Go shim passes it as the global --criu (1.7 ignores the
  // field, 2.x removed it; containerd never sets it unless the user does).
  std::string criu;
};

// What `create` gets besides the id (the bundle and pid file come from CliConfig).
struct CreateArgs {
  std::string console_socket;  // non-empty: --console-socket (terminal)
  bool no_pivot = false;       // Options.no_pivot_root
  bool no_new_keyring = false;  // Options.no_new_keyring: --no-new-keyring
};

// What `exec` gets besides the id.
struct ExecArgs {
  std::string exec_id;         // pid file <bundle>/<exec_id>.pid
  std::string process_file;    // the temp file holding the OCI Process JSON
  std::string console_socket;  // non-empty: --console-socket
};

// What the Go shim forwards from containerd.runc.v1.CheckpointOptions and the request.
struct CheckpointArgs {
  std::string image_path;  // the request's path
  std::string work_path;    // --work-path (CRIU's logs); empty: none
  std::string parent_path;  // --parent-path: a pre-dump's image dir (incremental)
  bool open_tcp = false;               // --tcp-established
  bool external_unix_sockets = false;  // --ext-unix-sk
  bool terminal = false;               // --shell-job
  bool file_locks = false;             // --file-locks
  std::string cgroups_mode;            // --manage-cgroups-mode (the Go shim leaves it empty)
  std::vector<std::string> empty_namespaces;  // --empty-ns each
  bool leave_running = true;           // --leave-running unless CheckpointOptions.exit
};

// `restore` as the Go shim runs it at Start of a container created from a checkpoint:
// always --detach, --pid-file <bundle>/init.pid and -no-subreaper.
struct RestoreArgs {
  std::string image_path;   // CreateTaskRequest.checkpoint
  std::string work_path;    // Options.criu_work_path, else <bundle>/work (caller decides)
  std::string parent_path;  // CreateTaskRequest.parent_checkpoint
  std::string console_socket;  // set at Start for a terminal: --console-socket
  bool no_pivot = false;       // --no-pivot
};

class CliCommandLine {
 public:
  // The command lines for the container `config` describes.
  explicit CliCommandLine(CliConfig config);

  // What it was made with.
  const CliConfig& config() const { return config_; }
  // argv[0]: Options.binary_name or "runc", as named (Go's cmd.Args[0]).
  std::string binary() const;
  // filepath.Join(root, namespace).
  std::string state_root() const;
  // filepath.Join(bundle, "log.json").
  std::string log_path() const;
  // filepath.Abs(filepath.Join(bundle, "init.pid")).
  std::string init_pid_file() const;
  // filepath.Abs(filepath.Join(bundle, exec_id + ".pid")).
  std::string exec_pid_file(std::string_view exec_id) const;

  // binary --root R --log L --log-format json [--criu C] [--systemd-cgroup]
  std::vector<std::string> prefix() const;

  // prefix create --bundle B --pid-file B/init.pid [--console-socket S] [--no-pivot]
  // [--no-new-keyring] ID
  std::vector<std::string> create(std::string_view id, const CreateArgs& args) const;
  // prefix start ID
  std::vector<std::string> start(std::string_view id) const;
  // prefix exec --process F [--console-socket S] --detach --pid-file B/<exec_id>.pid ID
  std::vector<std::string> exec(std::string_view id, const ExecArgs& args) const;
  // prefix kill [--all] ID SIGNAL
  std::vector<std::string> kill(std::string_view id, int signal, bool all) const;
  std::vector<std::string> remove(std::string_view id, bool force) const;  // `delete`
  // prefix pause ID
  std::vector<std::string> pause(std::string_view id) const;
  // prefix resume ID
  std::vector<std::string> resume(std::string_view id) const;
  // prefix ps --format json ID
  std::vector<std::string> ps(std::string_view id) const;
  // update --resources=- ID: the LinuxResources JSON goes to stdin.
  std::vector<std::string> update(std::string_view id) const;
  std::vector<std::string> state(std::string_view id) const;
  std::vector<std::string> checkpoint(std::string_view id, const CheckpointArgs& args) const;
  std::vector<std::string> restore(std::string_view id, const RestoreArgs& args) const;
  std::vector<std::string> version() const;  // go-runc keeps the global flags here too

 private:
  std::vector<std::string> with_prefix(std::initializer_list<std::string_view> args) const;

  CliConfig config_;
};

// `<binary> features` with no global flags: what the 2.x Go shim runs for -info, with the
// binary already resolved to an absolute path.
std::vector<std::string> cli_features_command(std::string_view binary_path);

}  // namespace shim::oci
