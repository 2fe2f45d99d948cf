// CliClient: runs runc (or any runc-compatible binary) for one container the way the Go
// runc shim does through go-runc, and turns failures into the errors the Go shim returns
// (github.com/containerd/go-runc runc.go; containerd pkg/process/utils.go in 1.6,
// cmd/containerd-shim-runc-v2/process/utils.go in 2.x).
//
// Every call blocks until the runtime has exited: call it on a WorkPool thread, e.g.
//   shim::post_and_reply(pool, loop, [&] { return runc.start(id); },
//                        [](shim::Status status) { ... });
// The runtime's exit is claimed from the reaper (never fanned out to subscribers). The
// client holds no mutable state: calls may run concurrently on several pool threads.
//
// Output capture follows go-runc: a command given an Stdio (the container's pipes, or
// all -1 for /dev/null) runs with it and nothing is captured; without one (std::nullopt,
// go-runc's "no IO", e.g. a terminal container) stdout+stderr are captured and appended
// to the error text. Error texts are go-runc's ("runc did not terminate successfully:
// exit status 1: <output>") wrapped the Go shim's way (shim/oci/cli_error.h). All errors are
// code Unknown except the kill mapping (NotFound).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shim/oci/cli_command.h"
#include "shim/oci/cli_process.h"
#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim::oci {

// Limits of every command a CliClient runs.
struct CliClientOptions {
  // Each command is SIGKILLed after this (the Go shim bounds calls by the RPC context).
  std::optional<std::chrono::milliseconds> timeout;
  std::size_t max_output = 1024 * 1024;  // captured bytes per stream
};

// `runc state` output (the fields the shim uses) and the raw JSON.
struct CliState {
  std::string id;      // the container id
  int pid = 0;         // its init's pid (0 once stopped)
  std::string status;  // created, running, paused, stopped
  std::string bundle;  // its bundle dir
  std::string rootfs;  // its root filesystem
  std::string json;    // the whole `state` output
};

// `runc --version`, parsed like go-runc (empty fields when the first line is not
// "runc version ...", e.g. for crun).
struct CliVersion {
  std::string runc;    // "1.1.5"
  std::string commit;  // the "commit: " line's value
  std::string spec;    // the "spec: " line's value (OCI runtime-spec version)
};

class CliClient {
 public:
  // Runs the CLI `config` names through `reaper` and `spawner` (both outlive it).
  CliClient(shim::Reaper& reaper, shim::Spawner& spawner, CliConfig config,
            CliClientOptions options = {});

  // The command lines it runs (pid file paths, state root, log.json).
  const CliCommandLine& command_line() const { return command_line_; }

  // create --bundle B --pid-file B/init.pid ... ID. "OCI runtime create failed: ..."
  shim::Status create(std::string_view id, const CreateArgs& args, const std::optional<Stdio>& io);
  // "OCI runtime start failed: ..."
  shim::Status start(std::string_view id);
  // Writes `process_json` (an OCI Process) to a temp file runc-process* in
  // $XDG_RUNTIME_DIR (or $TMPDIR, /tmp), runs exec --process F ... --detach --pid-file
  // B/<exec_id>.pid ID, removes the file. "OCI runtime exec failed: ..."
  shim::Status exec(std::string_view id, std::string_view exec_id, std::string_view process_json,
                    std::string_view console_socket, const std::optional<Stdio>& io);
  // kill [--all] ID SIG, errors mapped by kill_error() (NotFound when already gone).
  shim::Status kill(std::string_view id, int signal, bool all);
  // kill --all ID 9 (the Go shim's KillAll). "OCI runtime killall failed: ..."
  shim::Status kill_all(std::string_view id);
  // delete [--force] ID. An error saying the container "does not exist" counts as success
  // (the Go shim ignores it: a checkpoint removes runc's state); else
  // "failed to delete task: ...".
  shim::Status remove(std::string_view id, bool force);
  shim::Status pause(std::string_view id);   // "OCI runtime pause failed: ..."
  shim::Status resume(std::string_view id);  // "OCI runtime resume failed: ..."
  // ps --format json ID. Errors are go-runc's text, unwrapped.
  shim::Status ps(std::string_view id, std::vector<int>* pids);
  // update --resources=- ID with the LinuxResources JSON on stdin. go-runc's error text.
  shim::Status update(std::string_view id, std::string_view resources_json);
  // state ID. go-runc's error text.
  shim::Status state(std::string_view id, CliState* state);
  // checkpoint ... ID. An empty work_path means <bundle>/work/criu-work, removed after.
  // On failure CRIU's dump.log is copied to <bundle>/criu-dump.log and the error is the
  // first line of runc's error plus " path= <bundle>/criu-dump.log".
  shim::Status checkpoint(std::string_view id, CheckpointArgs args);
  // restore ... --detach --pid-file B/init.pid ... -no-subreaper --bundle B ID. Never
  // captures output. "OCI runtime restore failed: ..."
  shim::Status restore(std::string_view id, const RestoreArgs& args,
                       const std::optional<Stdio>& io);
  shim::Status version(CliVersion* version);

  // The pid the runtime wrote for the init (after create or restore) or for exec
  // `exec_id` (after exec), from command_line()'s pid files.
  shim::Status init_pid(std::uint32_t* pid) const;
  shim::Status exec_pid(std::string_view exec_id, std::uint32_t* pid) const;

  // Runs any argv (argv[0] the binary) with this client's reaper, spawner and limits.
  CommandResult run(std::vector<std::string> argv, OutputCapture capture, Stdio stdio = {},
                    std::string input = {});

 private:
  // go-runc's error text for a command that ran with its output captured (cmdOutput):
  // "<error>: <output>", "<start error>: <nil>" when it never started.
  static std::string captured_error(const CommandResult& result);
  // runOrError(): run captured, "" or the error text above.
  std::string run_or_error(std::vector<std::string> argv, std::string input = {});
  // Create/Exec/Restore: with `io` (uncaptured, plain error) or without (captured).
  std::string run_with_io(std::vector<std::string> argv, const std::optional<Stdio>& io);
  shim::Status runtime_failure(std::string_view action, const std::string& runc_error) const;

  shim::Reaper& reaper_;
  shim::Spawner& spawner_;
  CliCommandLine command_line_;
  CliClientOptions options_;
};

// What the 2.x Go shim runs for -info: `<binary> features` (binary looked up on PATH,
// no global flags), stdout returned as is (the features JSON). Error:
//   failed to execute [<path> features]: exit status 1 (stderr: "<stderr>")
shim::Status cli_features(shim::Reaper& reaper, shim::Spawner& spawner,
                          std::string_view binary_name, std::string* features_json);

// A pid file as runc writes it (decimal, maybe a newline). Unknown "invalid pid ..." when it
// holds no positive number; the read error when it cannot be read.
shim::Status read_pid_file(const std::string& path, std::uint32_t* pid);

// go-runc's parseVersion of `runc --version` output.
CliVersion parse_cli_version(std::string_view output);

}  // namespace shim::oci
